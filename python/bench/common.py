"""What the Python benchmarks share: timing, a printed table, goal lines that scripts/gpu-check
collects (SUMMARY|bench|what|value|goal|PASS or MISS), and result checks (a failed check makes the
run exit with 1)."""
import statistics
import sys
import time


class Bench:
    def __init__(self, name):
        self.name = name
        self.failures = []
        self.rows = []

    @staticmethod
    def time(fn, repeat=5, warmup=1, sync=None):
        """Median seconds of fn() over `repeat` runs after `warmup` runs; sync() ends each run (GPU)."""
        for _ in range(warmup):
            fn()
            if sync:
                sync()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            if sync:
                sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def check(self, ok, what):
        if not ok:
            self.failures.append(what)
            print(f"CHECK FAILED: {what}", flush=True)
        return ok

    def row(self, *cells):
        self.rows.append([str(c) for c in cells])

    def table(self, header):
        rows = [list(header)] + self.rows
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for i, r in enumerate(rows):
            print("  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(r, widths))))
            if i == 0:
                print("  ".join("-" * w for w in widths))
        self.rows = []
        print(flush=True)

    def goal(self, what, value, goal, unit="x", higher_is_better=True):
        ok = value >= goal if higher_is_better else value <= goal
        op = ">=" if higher_is_better else "<="
        print(f"SUMMARY|{self.name}|{what}|{value:.3g}{unit}|{op}{goal:.3g}{unit}|{'PASS' if ok else 'MISS'}", flush=True)
        return ok

    def info(self, what, value, unit=""):
        print(f"SUMMARY|{self.name}|{what}|{value:.4g}{unit}|-|INFO", flush=True)

    def skip(self, why):
        print(f"{self.name}: skipped: {why}")
        print(f"SUMMARY|{self.name}|skipped|{why}|-|INFO", flush=True)
        sys.exit(0)

    def finish(self):
        if self.failures:
            print(f"SUMMARY|{self.name}|result checks|{len(self.failures)} failed|0|FAIL", flush=True)
            sys.exit(1)
        sys.exit(0)
