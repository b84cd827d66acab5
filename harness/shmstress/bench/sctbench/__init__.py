"""SCTBench's small C programs ported to plain ``multiprocessing`` code.

The programs of ``benchmarks/concurrent-software-benchmarks`` of SCTBench (Thomson,
Donaldson, Betts, "Concurrency Testing Using Controlled Schedulers: An Empirical
Study", ACM TOPC 2016; mc-imperial/sctbench, MIT licence), one module per program
family, each scenario a plain function: the C threads are worker processes, the C
globals shared memory, the mutexes and condition variables ``multiprocessing``'s.
``programs`` lists them with what each is expected to end as; ``run`` is the
``shmstress bench --suite sctbench`` runner. ``README.md`` says what each port
kept and changed.
"""
