# A loop whose trace is 101 VM instructions: what `shimlab run --stats` times
# as "a trace of 100 instructions" directly (docs/jit.md and docs/findings.md,
# "What a trace costs to make").
i = 0
a = 1
b = 2
c = 3
d = 4
while i < 20000:
    a = a + b * 3 - c
    b = b + a % 7
    c = c + d - a % 3
    d = d + c % 11 + 1
    a = a % 1000
    b = b % 1000
    c = c % 1000
    d = d % 1000
    a = a + b * 3 - c
    b = b + a % 7
    c = c + d - a % 3
    d = d + c % 11 + 1
    a = a % 1000
    b = b % 1000
    c = c % 1000
    d = d % 1000
    i = i + 1
print(a + b + c + d)
