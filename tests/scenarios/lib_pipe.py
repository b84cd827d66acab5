"""A small request/response service over a ``multiprocessing.Pipe``, of the shape real ones
have: a server process answers ``(client, number)`` requests on its end of the pipe with
``(client, number * number)``; clients hold the other end.

``Service(locked=False)`` lets two client processes share the client end with nothing
around a request and its response: one can receive the other's answer (the racy twin).
``Service(locked=True)`` holds a lock from the request to its response.
"""

import multiprocessing as mp
from multiprocessing.connection import wait


def _serve(conn, requests):
    for _ in range(requests):
        client, number = conn.recv()
        conn.send((client, number * number))
    conn.close()


class Service:
    def __init__(self, clients=2, locked=True):
        self.server_end, self.client_end = mp.Pipe()
        self.lock = mp.Lock() if locked else None
        self.clients = clients
        self.answers = mp.Array("i", clients)
        self.server = mp.Process(target=_serve, args=(self.server_end, clients))

    def call(self, client, number):
        if self.lock is None:
            self.client_end.send((client, number))
            return self.client_end.recv()
        with self.lock:
            self.client_end.send((client, number))
            return self.client_end.recv()

    def run(self):
        self.server.start()
        callers = [mp.Process(target=_client, args=(self, client))
                   for client in range(self.clients)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        self.server.join()
        return list(self.answers)


def _client(service, client):
    who, answer = service.call(client, client + 2)
    assert who == client, f"client {client} received client {who}'s answer"
    service.answers[client] = answer


def shared_end_racy():
    assert Service(locked=False).run() == [4, 9]


def shared_end_locked():
    assert Service(locked=True).run() == [4, 9]


def _count_messages(reader, writer, total, close_writer):
    if close_writer:
        writer.close()  # its copy of the write end: else it waits for itself
    while True:
        try:
            total.value += reader.recv()
        except EOFError:
            return


def _count_to_the_end(close_writer):
    reader, writer = mp.Pipe(duplex=False)
    total = mp.Value("i", 0)
    counter = mp.Process(target=_count_messages, args=(reader, writer, total, close_writer))
    counter.start()
    reader.close()
    writer.send(1)
    writer.send(2)
    writer.close()
    counter.join()
    assert total.value == 3


def end_of_file():
    """The reader stops at the end of the file, once no process has the write end open."""
    _count_to_the_end(close_writer=True)


def end_of_file_never():
    """The reader keeps its inherited write end open: its recv waits for itself."""
    _count_to_the_end(close_writer=False)


def _answer_all(conns):
    while conns:
        for conn in wait(conns):
            number = conn.recv()
            conn.send(number + 1)
            conns.remove(conn)


def waits_on_several():
    ends = [mp.Pipe() for _ in range(2)]
    server = mp.Process(target=_answer_all, args=([theirs for _, theirs in ends],))
    server.start()
    for number, (mine, _) in enumerate(ends):
        mine.send(number)
    assert [mine.recv() for mine, _ in ends] == [1, 2]
    server.join()


def _both_send_first(size):
    my_reader, their_writer = mp.Pipe(duplex=False)  # one pipe each way
    their_reader, my_writer = mp.Pipe(duplex=False)
    peer = mp.Process(target=_peer, args=(their_reader, their_writer, size))
    peer.start()
    my_writer.send(bytes(size))
    assert len(my_reader.recv()) == size
    peer.join()


def _peer(reader, writer, size):
    writer.send(bytes(size))
    assert len(reader.recv()) == size


def both_send_first_small():
    _both_send_first(1000)


def both_send_first_large():
    """Each sends more than a pipe holds before receiving: both sends block for real."""
    _both_send_first(100_000)
