"""Game pages at a steady pace, from a process of its own: the restart phase of
tests/bench/live_scale.py times the pages a visitor asks for during a reconnect
wave with it. The bench's own process runs the 10,000 streams that reconnect,
and pages timed on its busy event loop would count its delays as the server's.

    python -m tests.bench.page_probe PORT SESSION RATE GAME_ID [GAME_ID ...]

Asks for RATE game pages a second (one-shot requests, as live_scale's Client
sends them), each on time whether or not the earlier ones were answered, until
its standard input closes; then prints one JSON list: [sent at, milliseconds,
status] per page, `sent at` on time.perf_counter's clock (the system's monotonic
clock, which the bench reads too). A refused connection is status 0.
"""

import asyncio
import json
import random
import sys
import time

HOST = "127.0.0.1"


async def page(port: int, session: str, game_id: int, answers: list) -> None:
    sent = time.perf_counter()
    try:
        reader, writer = await asyncio.open_connection(HOST, port)
    except OSError:
        answers.append([sent, (time.perf_counter() - sent) * 1000, 0])
        return
    try:
        writer.write(
            (
                f"GET /games/{game_id}/ HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
                f"Connection: close\r\nCookie: sessionid={session}\r\n\r\n"
            ).encode()
        )
        status_line = await reader.readline()
        await reader.read()  # the rest, until the server closes
        status = int(status_line.split()[1]) if status_line else 0
    except OSError:
        status = 0
    finally:
        writer.close()
    answers.append([sent, (time.perf_counter() - sent) * 1000, status])


async def probe(port: int, session: str, rate: float, game_ids: list[int]) -> list:
    loop = asyncio.get_running_loop()
    stopped = loop.create_future()
    loop.add_reader(sys.stdin.fileno(), lambda: stopped.done() or stopped.set_result(1))
    answers, tasks = [], set()
    next_at = loop.time()
    while not stopped.done():
        task = asyncio.create_task(
            page(port, session, random.choice(game_ids), answers)
        )
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        next_at += 1 / rate
        await asyncio.wait([stopped], timeout=max(0.0, next_at - loop.time()))
    await asyncio.gather(*tasks)
    return answers


def main(argv: list[str]) -> None:
    port, session, rate, *game_ids = argv
    answers = asyncio.run(
        probe(int(port), session, float(rate), list(map(int, game_ids)))
    )
    print(json.dumps(answers))


if __name__ == "__main__":
    main(sys.argv[1:])
