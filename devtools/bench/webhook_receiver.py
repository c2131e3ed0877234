"""A webhook receiver for bench_webhooks, run as a process of its own on 127.0.0.1.

It answers 204 and prints, per delivery, the reservation's id and the time it arrived
(time.monotonic, the same clock in every process of the machine). Its own process keeps its work
off the benchmark's placing process.
"""

import http.server
import json
import sys
import threading
import time

LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        seen = time.monotonic()
        self.send_response(204)
        self.end_headers()
        line = f"{json.loads(body)['data'].get('id')} {seen}\n"
        with LOCK:  # one line at a time: the server's threads print at once
            sys.stdout.write(line)
            sys.stdout.flush()

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 128  # 5 by default: the worker's eight senders would overflow it


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
