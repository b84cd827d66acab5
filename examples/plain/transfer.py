"""Two transfers between accounts, each locking both accounts: in opposite orders, a deadlock.

    shmstress test examples/plain/transfer.py:opposite_order   # deadlock, both locks named
    shmstress test examples/plain/transfer.py:same_order       # clean
"""

import multiprocessing as mp


def transfer(source, target, source_lock, target_lock, amount):
    with source_lock, target_lock:
        source.value -= amount
        target.value += amount


def _run(ordered):
    alice = mp.Value("i", 100, lock=False)
    bob = mp.Value("i", 100, lock=False)
    alice_lock = mp.Lock()
    bob_lock = mp.Lock()
    first = mp.Process(target=transfer, args=(alice, bob, alice_lock, bob_lock, 10))
    # the second transfer goes the other way; it takes the locks in the same order only
    # when ``ordered``
    locks = (alice_lock, bob_lock) if ordered else (bob_lock, alice_lock)
    second = mp.Process(target=transfer, args=(bob, alice, *locks, 20))
    first.start()
    second.start()
    first.join()
    second.join()
    assert alice.value + bob.value == 200


def opposite_order():
    _run(ordered=False)


def same_order():
    _run(ordered=True)
