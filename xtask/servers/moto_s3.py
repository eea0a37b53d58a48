"""moto's S3 server on a free loopback port, for gm-storage's tests.

Prints "PORT <n>" once it listens, and exits when its stdin closes: the test process that
started it holds the other end, so the server never outlives it, even after a crash.
"""
import os
import sys

from moto.server import ThreadedMotoServer

server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print("PORT", server.get_host_and_port()[1], flush=True)
sys.stdin.read()
os._exit(0)
