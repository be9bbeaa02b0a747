"""N-queens solutions counted by backtracking over bit masks (recursion, bit tricks)."""


def place(n, row, cols, diag1, diag2):
    if row == n:
        return 1
    count = 0
    free = ~(cols | diag1 | diag2) & ((1 << n) - 1)
    while free:
        bit = free & -free
        free = free ^ bit
        count += place(n, row + 1, cols | bit, ((diag1 | bit) << 1) & ((1 << n) - 1),
                       (diag2 | bit) >> 1)
    return count


n = 4
while n <= 11:
    print(n, place(n, 0, 0, 0, 0))
    n += 1
