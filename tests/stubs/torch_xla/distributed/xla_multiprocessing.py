"""``xmp.spawn`` as a single in-process worker with env:// rendezvous variables set."""

import os
import socket


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    # Under torchrun every process is one replica already: the function runs once, as its local rank.
    return fn(int(os.environ.get("LOCAL_RANK", "0")), *args)
