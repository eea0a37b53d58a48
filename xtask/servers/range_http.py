"""RangeHTTPServer serving a directory (argv[1]) on a free loopback port, for gm-storage's
tests: ranged GETs with Content-Range and Last-Modified, no ETag, no listing.

Prints "PORT <n>" once it listens, and exits when its stdin closes (see moto_s3.py).
"""
import functools
import os
import sys
import threading
from http.server import ThreadingHTTPServer

from RangeHTTPServer import RangeRequestHandler


class Quiet(RangeRequestHandler):
    def log_message(self, *args):
        pass


handler = functools.partial(Quiet, directory=sys.argv[1])
server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
print("PORT", server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()
os._exit(0)
