"""Nested loops over integers: LOAD_FAST, BINARY_OP, COMPARE_OP and jumps."""
from _common import bench


def loops(n):
    total = 0
    for i in range(n):
        for j in range(8):
            if (i ^ j) & 1:
                total += i * j
            else:
                total -= j
    return total


if __name__ == "__main__":
    bench("loops", loops)
