"""syncgate's benchmark suite, run by scripts/bench (its docstring says what is measured): a shared harness
(harness.py: running, timing, data, checks; servers.py: moto, the fault proxy, PostgreSQL) and one module per
group of cases (local, s3, headunit, away, exec, limits, fleet, flaky, gateway with watch.py and gateway_memory.py);
bench.py puts them together, cli.py is the command line."""
