"""A small job pipeline of the shape real ones have, over ``multiprocessing`` queues.

``Pipeline``: a producer process feeds an inbox queue, worker processes take items, square
them and pass them on to an outbox queue, and the caller collects the results; a ``None``
per worker stops them. Its ``Stats`` count the items the workers handled in a shared
``Value``; ``Stats(locked=False)`` counts with ``handled.value += 1`` outside the value's
lock, a lost update when two workers count at once (the racy twin).

``TaskFarm``: a ``JoinableQueue`` of tasks; each worker stores its answer in a shared
``Array`` and marks the task done; the caller ``join``s the queue, then reads the answers.
``TaskFarm(done_first=True)`` marks a task done before it stores the answer, so the
caller can read an answer that is not there yet (the racy twin).

The rest are shapes the harness must name: a get nobody will ever put for, a worker
blocked on a full bounded queue its parent only reads after joining it.
"""

import multiprocessing as mp

STOP = None


class Stats:
    """How many items the workers handled, in shared memory."""

    def __init__(self, locked=True):
        self.handled = mp.Value("i", 0)
        self.locked = locked

    def count(self):
        if self.locked:
            with self.handled.get_lock():
                self.handled.value += 1
        else:
            self.handled.value += 1  # a read step and a write step, with nothing around them


def _produce(inbox, items, workers):
    for item in items:
        inbox.put(item)
    for _ in range(workers):
        inbox.put(STOP)


def _transform(inbox, outbox, stats):
    while True:
        item = inbox.get()
        if item is STOP:
            outbox.put(STOP)
            return
        stats.count()
        outbox.put(item * item)


class Pipeline:
    def __init__(self, items, workers=2, locked=True):
        self.inbox = mp.Queue()
        self.outbox = mp.Queue()
        self.stats = Stats(locked)
        self.workers = workers
        self.processes = [mp.Process(target=_produce, args=(self.inbox, items, workers))]
        self.processes += [mp.Process(target=_transform, args=(self.inbox, self.outbox,
                                                                self.stats))
                           for _ in range(workers)]

    def run(self):
        for process in self.processes:
            process.start()
        results, stopped = [], 0
        while stopped < self.workers:
            item = self.outbox.get()
            if item is STOP:
                stopped += 1
            else:
                results.append(item)
        for process in self.processes:
            process.join()
        return sorted(results)


def pipeline_racy():
    pipeline = Pipeline([1, 2, 3], locked=False)
    assert pipeline.run() == [1, 4, 9]
    assert pipeline.stats.handled.value == 3, f"3 items, {pipeline.stats.handled.value} counted"


def pipeline_locked():
    pipeline = Pipeline([1, 2, 3], locked=True)
    assert pipeline.run() == [1, 4, 9]
    assert pipeline.stats.handled.value == 3, f"3 items, {pipeline.stats.handled.value} counted"


def _farm_worker(tasks, answers, done_first):
    while True:
        task = tasks.get()
        if task is STOP:
            tasks.task_done()
            return
        index, number = task
        if done_first:
            tasks.task_done()
            answers[index] = number * 10
        else:
            answers[index] = number * 10
            tasks.task_done()


class TaskFarm:
    def __init__(self, numbers, workers=2, done_first=False):
        self.tasks = mp.JoinableQueue()
        self.answers = mp.Array("i", len(numbers))
        self.numbers = numbers
        self.processes = [mp.Process(target=_farm_worker,
                                     args=(self.tasks, self.answers, done_first))
                          for _ in range(workers)]

    def run(self):
        for process in self.processes:
            process.start()
        for index, number in enumerate(self.numbers):
            self.tasks.put((index, number))
        self.tasks.join()  # every task done: every answer stored (if done after storing)
        answers = list(self.answers)
        for _ in self.processes:
            self.tasks.put(STOP)
        for process in self.processes:
            process.join()
        return answers


def farm_done_first():
    answers = TaskFarm([1, 2], done_first=True).run()
    assert answers == [10, 20], f"answers {answers} after join"


def farm_done_after():
    answers = TaskFarm([1, 2], done_first=False).run()
    assert answers == [10, 20], f"answers {answers} after join"


def _put_three(q):
    for item in range(3):
        q.put(item)
    q.put(STOP)


def _sum_until_stop(q, total):
    while True:
        item = q.get()
        if item is STOP:
            return
        total.value += item


def producer_consumer():
    q = mp.Queue()
    total = mp.Value("i", 0)
    producer = mp.Process(target=_put_three, args=(q,))
    consumer = mp.Process(target=_sum_until_stop, args=(q, total))
    producer.start()
    consumer.start()
    producer.join()
    consumer.join()
    assert total.value == 3, total.value


def nobody_puts():
    q = mp.Queue()
    consumer = mp.Process(target=_sum_until_stop, args=(q, mp.Value("i", 0)))
    consumer.start()
    consumer.join()


def _put_results(results):
    for item in range(3):
        results.put(item)


def joined_before_drained():
    results = mp.Queue(maxsize=1)
    worker = mp.Process(target=_put_results, args=(results,))
    worker.start()
    first = results.get()
    worker.join()  # the worker waits for room that only this process would make
    assert [first, results.get(), results.get()] == [0, 1, 2]


def _put_a_big_result(results, size):
    results.put(bytes(size))


def _join_then_get(size):
    results = mp.Queue()
    worker = mp.Process(target=_put_a_big_result, args=(results, size))
    worker.start()
    worker.join()  # the worker ends only once its feeder has written all it put
    assert len(results.get()) == size


def joined_before_get_small():
    """A result the queue's pipe holds: the worker's end does not wait for its reader."""
    _join_then_get(1000)


def joined_before_get_large():
    """A result larger than the pipe holds: the multiprocessing guidelines' deadlock."""
    _join_then_get(100_000)
