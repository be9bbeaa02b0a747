"""Loops nested four deep with arithmetic; prints one line per inner block."""

acc = 7
for a in range(20):
    for b in range(1, 14):
        for c in range(0, 15, 2):
            s = 0
            for d in range(c, c + 9):
                s = (s * 31 + a * d - b + c * c) % 1000003
                acc = (acc ^ (s << 3)) & 0xFFFFFF
            print(a, b, c, s, acc % 1000)
print(acc)
