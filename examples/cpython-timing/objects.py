"""Attribute loads and stores, method calls, a dict and a list: the
specialized instructions of the object model."""
from _common import bench


class Point:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    def moved(self, dx):
        return Point(self.x + dx, self.y - dx)


def objects(n):
    seen = {}
    p = Point(0, 0)
    out = []
    for i in range(n):
        p = p.moved(i & 7)
        seen[i & 255] = p.x
        if i % 64 == 0:
            out.append(p.y)
    return len(out) + len(seen)


if __name__ == "__main__":
    bench("objects", objects)
