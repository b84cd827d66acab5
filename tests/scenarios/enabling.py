"""Three failures whose race starts before their symptom, one of each shape the explanation
must reach back to (tests/test_explain.py): a ready flag published before the rows it
guards, a flag read outside the lock and acted on inside it, and a list head read, then
overwritten by another process, before the write computed from it."""

import multiprocessing as mp

ROWS = 2
EMPTY = -1


def _publish(ready, rows):
    ready.value = 1  # BAD: published before the rows
    for i in range(ROWS):
        rows[i] = 7


def _consume(ready, rows):
    if ready.value:
        assert rows[ROWS - 1] == 7, "ready, yet the rows are not written"


def ready_before_rows():
    ready = mp.Value("i", 0, lock=False)
    rows = mp.Array("i", ROWS, lock=False)
    processes = [mp.Process(target=_publish, args=(ready, rows)),
                 mp.Process(target=_consume, args=(ready, rows))]
    for process in processes:
        process.start()
    for process in processes:
        process.join()


def _take(items, lock):
    if items.value > 0:  # BAD: checked outside the lock
        with lock:
            items.value -= 1
            assert items.value >= 0, "took an item that was not there"


def flag_outside_lock():
    items = mp.Value("i", 1, lock=False)
    lock = mp.Lock()
    processes = [mp.Process(target=_take, args=(items, lock)) for _ in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()


def _push(head, nxt, node):
    old = head.value  # BAD: the head may change before the write below
    nxt[node] = old
    head.value = node


def stale_head():
    head = mp.Value("i", EMPTY, lock=False)
    nxt = mp.Array("i", 2, lock=False)
    processes = [mp.Process(target=_push, args=(head, nxt, node)) for node in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    count, node = 0, head.value
    while node != EMPTY and count <= 2:
        count, node = count + 1, nxt[node]
    assert count == 2, f"2 pushed, {count} on the list"
