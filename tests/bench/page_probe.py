"""Game pages at a steady pace, from a process of its own: the restart phase of
tests/bench/live_scale.py times the pages a visitor asks for during a reconnect
wave with it. The bench's own process runs the 10,000 streams that reconnect,
and pages timed on its busy event loop would count its delays as the server's.

    python -m tests.bench.page_probe PORT SESSION RATE GAME_ID [GAME_ID ...]

Asks for RATE game pages a second (live_scale's Client's one-shot requests),
each on time whether or not the earlier ones were answered, until its standard
input closes; then prints one JSON list: [sent at, milliseconds,
status] per page, `sent at` on time.perf_counter's clock (the system's monotonic
clock, which the bench reads too). A refused connection is status 0.
"""

import asyncio
import json
import random
import sys
import time

from tests.bench.live_scale import Client


async def page(client: Client, port: int, session: str, game_id: int, answers):
    sent = time.perf_counter()
    try:
        status = await client.request(port, "GET", f"/games/{game_id}/", session)
    except (OSError, IndexError):  # refused, or closed before a status line
        status = 0
    answers.append([sent, (time.perf_counter() - sent) * 1000, status])


async def probe(port: int, session: str, rate: float, game_ids: list[int]) -> list:
    loop = asyncio.get_running_loop()
    stopped = loop.create_future()
    loop.add_reader(sys.stdin.fileno(), lambda: stopped.done() or stopped.set_result(1))
    client, answers, tasks = Client(), [], set()
    next_at = loop.time()
    while not stopped.done():
        task = asyncio.create_task(
            page(client, port, session, random.choice(game_ids), answers)
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
