"""A new user's seat booking: a numpy array of free seats per row over ``SharedMemory``,
booked by several processes. ``book`` checks that a seat is free, then takes it: check
then act. The racy version does both with nothing held; the correct one holds a lock
across the check and the act. Nothing is marked or flagged for shmstress: the array is
plain numpy, as the user wrote it."""

import multiprocessing as mp
from multiprocessing import shared_memory

import numpy as np

ROWS = 2


def _book(name, row, lock):
    block = shared_memory.SharedMemory(name=name)
    seats = np.ndarray((ROWS,), dtype=np.int64, buffer=block.buf)
    if lock is not None:
        lock.acquire()
    try:
        if seats[row] > 0:  # a free seat: take it
            seats[row] = seats[row] - 1
            booked = True
        else:
            booked = False
    finally:
        if lock is not None:
            lock.release()
    del seats
    block.close()
    return booked


def _customer(name, row, lock, sold):
    if _book(name, row, lock):
        with sold.get_lock():
            sold.value += 1


def _run(lock):
    block = shared_memory.SharedMemory(create=True, size=8 * ROWS)
    seats = np.ndarray((ROWS,), dtype=np.int64, buffer=block.buf)
    seats[:] = 1  # one seat left in each row
    sold = mp.Value("i", 0)
    try:
        customers = [mp.Process(target=_customer, args=(block.name, 0, lock, sold))
                     for _ in range(2)]
        for customer in customers:
            customer.start()
        for customer in customers:
            customer.join()
        left = int(seats[0])
    finally:
        del seats
        block.close()
        block.unlink()
    assert sold.value + left == 1, f"{sold.value} tickets sold for 1 seat ({left} left)"


def booking_racy():
    _run(None)


def booking_locked():
    _run(mp.Lock())
