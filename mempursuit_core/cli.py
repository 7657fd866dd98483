"""The ``mempursuit`` command: wiring only; the work lives in the modules it calls."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

import numpy as np


def _cmd_adapters(args) -> int:
    from .plugins import adapter_plugins

    found = adapter_plugins()
    adapters = {name: spec for name, (spec, _, _) in found.items()}
    if args.json:
        print(json.dumps({n: {"framework": s.framework, "installed": s.framework_installed(),
                              "extra": s.extra, "install": s.hint, "summary": s.summary,
                              "swap": s.swap, "docs": s.docs,
                              "second_read": s.second_read or None,
                              "plugin": found[n][1], "distribution": found[n][2]}
                          for n, s in sorted(adapters.items())}, indent=2))
        return 0
    if not adapters:
        print("no adapters registered")
        return 0
    import textwrap

    width = max(len(n) for n in adapters)
    indent = " " * (width + 2)
    for name, spec in sorted(adapters.items()):
        installed = spec.framework_installed()
        print(f"{name:<{width}}  {spec.framework}: {'installed' if installed else 'not installed'}")
        origin = f"from {found[name][2]} (plugin {found[name][1]!r})"
        for text in ([spec.summary] if spec.summary else []) + (
                [f"swap: {spec.swap}"] if spec.swap else []) + (
                [f"docs: {spec.docs}"] if spec.docs else []) + [
                f"second read: {spec.second_read or 'no'}"] + [origin] + (
                [] if installed else [f"install: {spec.hint}"]):
            print(textwrap.fill(text, 100, initial_indent=indent, subsequent_indent=indent + "  "))
    return 0


def _cmd_selectors(args) -> int:
    from .builtins import DEFAULT_POLICY
    from .builtins import EXPERIMENTAL_PREFIX as PREFIX
    from .plugins import list_selectors

    selectors = list_selectors()
    experimental = {n: d for n, d in selectors.items() if n.startswith(PREFIX)}
    kept = {n: d for n, d in selectors.items() if n not in experimental}
    for name, desc in kept.items():
        mark = "*" if name == DEFAULT_POLICY else " "
        print(f"{mark} {name:<22} {desc}")
    print(f"(* the default read policy: {DEFAULT_POLICY})")
    if experimental:
        print("\nexperimental (behind the default in docs/results.md; may change or go):")
        for name, desc in experimental.items():
            print(f"  {name:<30} {desc.removeprefix('[experimental] ')}")
    return 0


def _load_npy(path: str, what: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"mempursuit select: cannot read {what} from {path!r}: {exc}") from None


def _cmd_select(args) -> int:
    from .plugins import get_selector

    q = _load_npy(args.query, "the query")
    M = _load_npy(args.candidates, "the candidates")
    selector = get_selector(args.policy)
    try:
        if args.policy in ("mempursuit", "mempursuit-adaptive"):
            from .pursuit import select

            adaptive = args.adaptive or args.policy == "mempursuit-adaptive"
            res = select(q, M, args.k, ridge=args.ridge, adaptive=adaptive, tau=args.tau,
                         patience=args.patience)
            order, weights, losses, gaps, stop = (res.order, res.weights, res.losses, res.gaps,
                                                  res.stop_reason)
        else:
            sel = selector.select(q, M, args.k)
            order, weights, losses, gaps, stop = sel.order, sel.weights, None, None, sel.stopped
    except ValueError as exc:
        print(f"mempursuit select: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({
            "order": order.tolist(),
            "weights": None if weights is None else weights.tolist(),
            "losses": None if losses is None else losses.tolist(),
            "gaps": None if gaps is None else gaps.tolist(),
            "stop_reason": stop,
        }))
        return 0
    print(f"policy {args.policy}: {len(order)} of {len(M)} candidates"
          + (f" (stopped: {stop})" if stop else ""))
    print(f"{'step':>4} {'index':>6} {'weight':>10} {'loss':>12} {'gap':>12}")
    for t, j in enumerate(order):
        w = f"{weights[t]:.6f}" if weights is not None else "-"
        lo = f"{losses[t]:.6e}" if losses is not None else "-"
        ga = f"{gaps[t]:.3e}" if gaps is not None else "-"
        print(f"{t + 1:>4} {j:>6} {w:>10} {lo:>12} {ga:>12}")
    return 0


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line naming the problem and pointing at
    ``--help`` (exit status 2), instead of the usage block followed by the error. An unknown
    flag is named by the command it was given to (``mempursuit eval``), with the closest flag
    that command has."""

    def __init__(self, *args, **kwargs):
        # no abbreviations: `--policy x` must not be read as `--policy-opt x`
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        import re

        from .plugins import did_you_mean

        m = re.search(r"invalid choice: '?([^'\s]*)'? \(choose from (.*)\)", message)
        if m:  # a misspelt --dataset / --units / command: the closest name
            choices = [c.strip(" '\"") for c in m.group(2).split(",")]
            message += did_you_mean(m.group(1), choices)
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = self._command_parser(parsed)
            parser.error(f"unrecognized arguments: {' '.join(extras)}"
                         + parser._closest_flag(extras))
        return parsed

    def _command_parser(self, parsed) -> "OneLineParser":
        """The (sub)command's own parser: argparse hands a subcommand's unknown arguments up
        to the top parser, which would name itself."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(chosen, OneLineParser):
                    return chosen._command_parser(parsed)
        return self

    def _closest_flag(self, extras: list[str]) -> str:
        import difflib
        import re

        def singular(name: str) -> str:  # --policy for --policies, --no-plot for --no-plots
            return re.sub(r"ies$", "y", name).rstrip("s")

        names = [f[2:] for f in self._option_string_actions if f.startswith("--")]
        for arg in extras:  # compared without the dashes, which every flag shares
            if arg.startswith("--"):
                typed = arg[2:].split("=", 1)[0]
                close = [n for n in names if singular(n) == singular(typed)] or \
                    difflib.get_close_matches(typed, names, n=1, cutoff=0.6)
                if close:
                    return f" (did you mean '--{close[0]}'?)"
        return ""


#: What ``mempursuit --help`` ends with: the demo a new user runs first, and where the docs are.
EPILOG = """\
the demo (from a checkout, offline, seconds: native order vs the default policy):
  pip install -e ".[eval]"
  mempursuit eval --dataset locomo --data tests/fixtures/dialogue.json --out runs/demo

docs: README.md and docs/ in the checkout (docs/harness.md: mempursuit eval; each
adapter's page: mempursuit adapters); a command's own options: mempursuit COMMAND --help"""


def build_parser() -> argparse.ArgumentParser:
    from .builtins import DEFAULT_POLICY

    parser = OneLineParser(
        prog="mempursuit",
        description="Read policies that reorder the candidate pool an agent-memory framework "
                    "retrieves, before it keeps the top K.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("adapters", help="list registered framework adapters and whether each framework is installed")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_adapters)

    p = sub.add_parser("selectors", help="list registered read policies")
    p.set_defaults(func=_cmd_selectors)

    p = sub.add_parser("select", help="select from candidates in .npy files and print the trace")
    p.add_argument("query", help=".npy file with the query vector, shape (d,)")
    p.add_argument("candidates", help=".npy file with candidate vectors, shape (P, d), native order")
    p.add_argument("-k", type=int, default=10, help="budget (default 10)")
    p.add_argument("--policy", default=DEFAULT_POLICY,
                   help=f"selector name (default {DEFAULT_POLICY}; the paper's rule: mempursuit)")
    p.add_argument("--adaptive", action="store_true",
                   help="with --policy mempursuit: stop early (adaptive stopping, --tau, --patience)")
    p.add_argument("--ridge", type=float, default=1e-10)
    p.add_argument("--tau", type=float, default=1e-5)
    p.add_argument("--patience", type=int, default=2)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_select)

    from .plugins import add_commands

    add_commands(sub)  # e.g. ``eval`` and ``bench`` from the harness (mempursuit_eval)
    return parser


def _stdout_gone() -> int:
    """The reader of stdout went away (``mempursuit eval ... | head``): nothing more is printed,
    and exit status 141, as a command stopped by SIGPIPE has; no traceback at shutdown either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor
        pass
    return 141


_GRACE_S = 5.0  # after a Ctrl-C, how long the run may take to unwind before it is ended
_EXITING = threading.Lock()  # held, never released, by whoever ends the process


def _interrupted(args) -> str:
    if getattr(args, "no_cache", True):  # --no-cache, or a command that caches nothing
        return f"mempursuit {args.command}: interrupted"
    return (f"mempursuit {args.command}: interrupted (the texts embedded so far are cached: "
            "run the same command again to embed only the rest)")


def _exit_interrupted(args, *, flush: bool = True) -> None:
    """Write the one line to file descriptor 2 and end the process with 130, without waiting for
    threads. ``flush=False`` (the Ctrl-C watch's thread) leaves the streams unflushed: the run's
    own thread may hold their locks, and is not waited for."""
    with _EXITING:
        for stream in (sys.stdout, sys.stderr) if flush else ():
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe or stream: the line still goes out
                pass
        try:
            os.write(2, f"{_interrupted(args)}\n".encode("utf-8", "replace"))
        finally:
            os._exit(130)


class _CtrlC:
    """SIGINT handler for the command line. It raises ``KeyboardInterrupt`` as Python's own does,
    and a thread started beforehand ends the run if it has not ended ``_GRACE_S`` later (Python
    prints and drops a ``KeyboardInterrupt`` raised in a finalizer) or at a second Ctrl-C.

    The handler only sets events: it may run inside any code of the run's thread, locks held."""

    def __init__(self, args):
        self.args = args
        self.count = 0
        self.fired = threading.Event()
        self.again = threading.Event()
        threading.Thread(target=self._watch, name="mempursuit-ctrl-c", daemon=True).start()

    def _watch(self) -> None:
        self.fired.wait()
        self.again.wait(_GRACE_S)
        _exit_interrupted(self.args, flush=False)

    def __call__(self, signum, frame) -> None:
        self.count += 1
        if self.count == 1:
            self.fired.set()
            raise KeyboardInterrupt
        if self.count == 2:
            self.again.set()


def main(argv: list[str] | None = None) -> int:
    """Run the command; a known kind of bad input (an unknown name, a framework not installed, a
    ``ValueError`` from a command's checks) is one line on stderr and exit status 2, Ctrl-C one
    line and 130, a closed stdout (``| head``) silence and 141."""
    from .plugins import AdapterNotInstalledError, UnknownNameError

    args = build_parser().parse_args(argv)
    command_line = argv is None
    if command_line and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _CtrlC(args))  # not where Ctrl-C is ignored
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at shutdown
        return status
    except BrokenPipeError:
        return _stdout_gone()
    except (UnknownNameError, AdapterNotInstalledError) as exc:
        print(f"mempursuit {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if command_line:  # exit now, not after requests still in flight
            _exit_interrupted(args)
        print(_interrupted(args), file=sys.stderr)
        return 130

if __name__ == "__main__":
    sys.exit(main())
