"""Python-to-Python calls and returns: frame push and pop in the eval loop."""
from _common import bench


def add(a, b):
    return a + b


def fib(n):
    return n if n < 2 else add(fib(n - 1), fib(n - 2))


def calls(n):
    total = 0
    for _ in range(max(1, n // 2000)):
        total += fib(14)
    return total


if __name__ == "__main__":
    bench("calls", calls)
