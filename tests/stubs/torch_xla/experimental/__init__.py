_EAGER = [False]


def eager_mode(enable):
    _EAGER[0] = bool(enable)


def is_eager_mode():
    return _EAGER[0]
