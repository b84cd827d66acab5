"""How queues and pipes behave under shmstress: scenarios the plain-code tests run."""

import multiprocessing as mp

at_import = mp.Queue()
at_import.put("put at import")


def the_import_time_message_is_there_every_time():
    assert at_import.get() == "put at import"
    at_import.put("put in an execution")  # gone again in the next one
    assert at_import.get() == "put in an execution"


def _echo(inbox, conn):
    conn.send_bytes(inbox.get())


def a_megabyte_with_the_reader_parked():
    """An OS pipe holds 64 KiB: with the messages in an OS pipe, a put of 1 MB with its
    reader parked would block the only process that runs. In the mailbox it is one step
    (the real put returns at once too: its feeder thread writes)."""
    inbox = mp.Queue()
    mine, theirs = mp.Pipe()
    echo = mp.Process(target=_echo, args=(inbox, theirs))
    echo.start()
    big = bytes(range(256)) * 4096
    inbox.put(big)
    assert mine.recv_bytes() == big
    echo.join()


def two_megabytes_in_a_one_mebibyte_mailbox():
    mp.Queue().put(bytes(2_000_000))


def a_lock_put_into_a_queue():
    mp.Queue().put(mp.Lock())


def _answer_on(requests):
    conn = requests.get()
    conn.send("answered on the end it received")


def an_end_travels_in_a_queue():
    requests = mp.Queue()
    mine, theirs = mp.Pipe()
    answerer = mp.Process(target=_answer_on, args=(requests,))
    answerer.start()
    requests.put(theirs)
    assert mine.recv() == "answered on the end it received"
    answerer.join()


def timeouts_and_nowaits():
    import queue

    q = mp.Queue(maxsize=1)
    try:
        q.get_nowait()
        raise AssertionError("get_nowait on an empty queue returned")
    except queue.Empty:
        pass
    q.put(1)
    try:
        q.put_nowait(2)
        raise AssertionError("put_nowait on a full queue returned")
    except queue.Full:
        pass
    assert q.full() and q.qsize() == 1  # not empty(): the real feeder may not have written
    assert q.get(timeout=5) == 1
    reader, writer = mp.Pipe(duplex=False)
    assert not reader.poll()
    writer.send(None)
    assert reader.poll(5)
    q.close()
    q.join_thread()


def _square(number):
    return number * number


def no_helper_threads():
    """The real Queue, Pool and executor start threads in this process; these start none."""
    import threading
    from concurrent.futures import ProcessPoolExecutor

    q = mp.Queue()
    q.put(1)
    with mp.Pool(2) as pool, ProcessPoolExecutor(2) as executor:
        assert pool.map(_square, [1, 2]) == [1, 4]
        assert executor.submit(_square, 3).result() == 9
        assert threading.active_count() == 1, threading.enumerate()
    assert q.get() == 1
    assert threading.active_count() == 1, threading.enumerate()
