"""Takeuchi's function and Ackermann's: deep recursion, few instructions a call."""


def tak(x, y, z):
    if y < x:
        return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))
    return z


def ack(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ack(m - 1, 1)
    return ack(m - 1, ack(m, n - 1))


print(tak(18, 12, 6))
print(tak(24, 16, 8))
for n in range(1, 7):
    print(ack(2, n), ack(3, n))
