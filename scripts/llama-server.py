"""llama.cpp's OpenAI-compatible server (xllamacpp, in this process) on a free loopback port.

Prints one JSON line, {"url": "http://127.0.0.1:<port>"}, once the model is loaded and the server listens, then
serves until its standard input closes (the parent went away) or it gets SIGTERM/SIGINT.

    PYTHONPATH=.tools/llama/python python3 scripts/llama-server.py --model .tools/llama/models/<file>.gguf
"""
import argparse
import json
import os
import signal
import sys
import threading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="path of the GGUF model")
    parser.add_argument("--ctx", type=int, default=8192, help="context window in tokens")
    # A small model at temperature 0 can repeat itself until the context is full: the cap ends every answer.
    parser.add_argument("--n-predict", type=int, default=512, help="most tokens one answer may have")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: all but one core)")
    args = parser.parse_args()

    if not os.path.isfile(args.model):
        sys.exit(f"llama-server: no model file at {args.model} (run scripts/install-llama.sh)")
    try:
        import xllamacpp
    except ImportError as err:
        sys.exit(f"llama-server: cannot import xllamacpp ({err}); run scripts/install-llama.sh and set PYTHONPATH")

    # The worker, Temporal and the test runner share the machine; llama.cpp's threads spin while they wait, and
    # with every core taken they slow each other down more than they help.
    threads = args.threads or max(1, (os.cpu_count() or 2) - 1)
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx
    params.n_predict = args.n_predict
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the OS picks a free port; the server reports which
    server = xllamacpp.Server(params)
    print(json.dumps({"url": server.listening_address, "threads": threads}), flush=True)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    def watch_stdin() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    stop.wait()
    # The server's threads are native and not daemonic: leave without waiting for them.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
