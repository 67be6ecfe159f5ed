"""gpuops-bench: benchmarks of gpuops' operators, the performance goals' tables (targets), a comparison of two
runs, and DirectML's DxDispatch model files run on any WebGPU adapter.

Every error is one line on stderr starting with "gpuops-bench: error: ". A user error (a bad argument, a malformed
model, an unknown operator, a refused description, a file given that cannot be read or written, a results file
compare cannot use) exits with status 2; what the installation or the machine cannot do (a missing package,
installed file or adapter, out of memory, a WebGPU error) with status 3. A kernel whose result differs from NumPy
is reported with status 1 and is never timed; compare exits with status 1 when a row regressed beyond --fail-above.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import sys
from pathlib import Path

from .. import __version__, shaders
from ..backends import BACKEND_ENV, BACKENDS, RUNTIME_CHECKS_ENV, installed_backends, load_backend
from ..device import Device
from ..enums import DataType, FeatureLevel
from ..errors import DeviceError, GpuOpsError
from ..operators import OPERATORS
from ..plan import DispatchPolicy
from ..validation import validate
from . import compare as compare_runs, report, targets
from .model import DispatchCommand, ModelError, ModelRunner, RunOptions, load_model
from .suite import (DEFAULT_DTYPES, SWEEP_MIN, Session, cases_for, default_elements, layout_sizes, operator_names,
                    plot_sweep, run_cases, select_pairs, sweep_limit)
from .stats import DEFAULT_MAX_TIME_S, MAX_SAMPLES, StoppingRule
from .ticks import calibrate
from .timing import CACHES, GpuTimer, exact_timestamps_for
from .workload import DATA_HELP, DATA_SETS, LAYOUT_HELP, LAYOUTS, make_case, make_desc

PROG = "gpuops-bench"
DISTRIBUTION = "gpuops-webgpu"  # the name gpuops is installed under (pyproject.toml); the import name is gpuops
PACKAGE_DIR = Path(__file__).resolve().parents[1]
COMPARE_CHOICES = ("numpy", "torch", "cupy")
EXIT_OK, EXIT_WRONG_RESULT, EXIT_USAGE, EXIT_ENVIRONMENT = 0, 1, 2, 3
EXIT_STATUS_HELP = ("exit status: 0 ok; 1 a result differed from NumPy (not timed), or compare found a regression "
                    "above --fail-above; 2 a usage error (a file given that cannot be read or written included); 3 "
                    "the installation or the machine cannot do it (a missing package, installed file or adapter, out "
                    "of memory, a WebGPU error)")
CACHE_CHOICES = ("warm", "cold", "both")


class UsageError(GpuOpsError):
    """A command line the tool cannot act on."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is a UsageError (one line, status 2) instead of usage text and exit."""

    def error(self, message: str):
        raise UsageError(f"{message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------------------------- argument types

def _words(text: str) -> list[str]:
    return [word.strip() for word in text.split(",") if word.strip()]


def _positive_ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(word) for word in _words(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give non-negative integers, e.g. 4096,4096")
    return values


def parse_size(text: str) -> int:
    """A count as gpuops-bench and the benchmark scripts take it: '65536', '2^16', '2**16' or '1<<16' (ValueError
    for anything else)."""
    cleaned = text.replace(" ", "")
    for power in ("**", "^"):
        if power in cleaned:
            base, exponent = cleaned.split(power)
            return int(base) ** int(exponent)
    if "<<" in cleaned:
        base, shift = cleaned.split("<<")
        return int(base) << int(shift)
    return int(cleaned)


def _sizes(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(word) for word in _words(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r}: give sizes, e.g. 1024,1024")
    bad = next((v for v in values if v < 1), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(f"size {bad} in {text!r}: every size must be at least 1")
    return values


def _percent(text: str) -> float:
    """'2%' or '2' (percent) as the fraction 0.02."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (e.g. 2%)") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}; must be 0% or more")
    return value / 100


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value}; must be more than 0")
    return value


BYTE_UNITS = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "K": 1 << 10, "M": 1 << 20,
              "G": 1 << 30}


def _bytes(text: str) -> int:
    """A byte count: 268435456, 256MiB, 256M, 1GiB, 2^28."""
    cleaned = text.replace(" ", "")
    match = re.fullmatch(r"(\d+)([A-Za-z]*)", cleaned)
    try:
        if match and match.group(2).upper() in BYTE_UNITS:
            value = int(match.group(1)) * BYTE_UNITS[match.group(2).upper()]
        else:
            value = _elements(cleaned)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a byte count (e.g. 256MiB, 1GiB, 2^28)") from None
    if value < 4:
        raise argparse.ArgumentTypeError(f"{text!r}; must be at least 4 bytes")
    return value


def _count(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value}; must be at least {minimum}")
        return value
    return parse


def _milliseconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of milliseconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value}; must be more than 0")
    return value


def _elements(text: str) -> int:
    """An element count: 65536, 2^16 or 1<<16."""
    try:
        value = parse_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an element count (e.g. 65536, 2^16)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}; must be at least 1")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value}; must lie between 0 and 1")
    return value


def _feature_level(text: str) -> FeatureLevel:
    try:
        return FeatureLevel.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _compare(values: list[str] | None) -> tuple[str, ...]:
    wanted = [w.lower() for v in values or [] for w in _words(v)]
    for word in wanted:
        if word not in COMPARE_CHOICES:
            raise UsageError(f"--compare {word!r}; allowed: {', '.join(COMPARE_CHOICES)}")
    return tuple(c for c in COMPARE_CHOICES if c in wanted)


def _flat(values: list[str] | None) -> list[str] | None:
    return [w for v in values for w in _words(v)] if values else None


def _sampling_options(options: argparse.ArgumentParser, iterations: int, warmup: int, what: str = "case") -> None:
    """The options of how many samples each timed figure takes, shared by every benchmark command."""
    options.add_argument("-i", "--iterations", "--min-samples", type=_count(1), default=iterations, metavar="N",
                         help=f"timed samples per {what}; with --max-noise, the fewest (default {iterations})")
    options.add_argument("-w", "--warmup", type=_count(0), default=warmup, metavar="N",
                         help=f"untimed warm-up iterations before them (default {warmup})")
    options.add_argument("--max-noise", type=_percent, metavar="PCT",
                         help=f"sample each {what} until its noise (relative interquartile range of the samples, GPU "
                              "times, else host times) is at most this, e.g. 1%%, or its --max-time is spent "
                              "(default: no target, exactly -i samples)")
    options.add_argument("--max-time", type=_seconds, default=DEFAULT_MAX_TIME_S, metavar="SECONDS",
                         help=f"with --max-noise: sampling time per {what}, once its -i samples are taken (default "
                              f"{DEFAULT_MAX_TIME_S:g}; at most {MAX_SAMPLES} samples); a {what} that ends above the "
                              "target is marked '!'")


def _data_help() -> str:
    """'bench: ...; worst: ...': the benchmark's data sets, for argparse (which reads % as a format)."""
    return "; ".join(f"{name}: {words}" for name, words in DATA_HELP.items()).replace("%", "%%")


def _timing_options(iterations: int, warmup: int, json_default: str | None = None) -> argparse.ArgumentParser:
    """Options every benchmark command shares; a fresh parser each time, since argparse shares parents' actions and
    set_defaults on one command would change the others."""
    options = _Parser(add_help=False)
    _sampling_options(options, iterations, warmup)
    options.add_argument("--cache", choices=CACHE_CHOICES, default="warm",
                         help="warm: each sample finds the caches as the one before left them (default); cold: "
                              "the GPU's caches are flushed before each sample, outside its times; both: a row of "
                              "each")
    options.add_argument("--flush-bytes", type=_bytes, metavar="BYTES",
                         help="with --cache cold or both: bytes written to flush the caches, more than the "
                              "last-level cache (default 256MiB on a GPU; on a software adapter twice the CPU's "
                              "largest cache)")
    options.add_argument("--data", choices=tuple(DATA_SETS), default="bench",
                         help="the inputs' values (default bench): " + _data_help())
    options.add_argument("--json", metavar="FILE", default=json_default,
                         help="write the results as JSON (layout: docs/bench-json.md)"
                              + (f"; default {json_default}" if json_default else ""))
    options.add_argument("--compare", action="append", metavar="WHAT",
                         help="also time the same operation in 'numpy' (CPU), 'torch' (PyTorch on CUDA) or 'cupy' "
                              "(CuPy on CUDA), the last two when importable, with the case's layout (a transposed "
                              "case into a row-major output, nchw-to-nhwc into a channels-last one); repeat or "
                              "separate with commas")
    options.add_argument("--repeats", type=_count(1), default=1, metavar="N",
                         help="passes per timed span, for timestamps rounded to coarse steps (default 1; 40 for those)")
    options.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    options.add_argument("--cuda-context", action="store_true",
                         help="hold a CUDA context (through PyTorch, when importable) during the run: NVIDIA drivers "
                              "may otherwise run Vulkan compute in a lower performance state")
    return options


# ------------------------------------------------------------------------------------------------ the parser

def _output_defaults() -> str:
    """'uint8 for is_nan/is_infinity': the rows' default output types."""
    names: dict[DataType, list[str]] = {}
    for spec in OPERATORS:
        if spec.default_output_type is not None:
            names.setdefault(spec.default_output_type, []).append(spec.numpy_name)
    return ", ".join(f"{data_type.name.lower()} for {'/'.join(ops)}" for data_type, ops in names.items())


def _mode_help() -> str:
    """"is_infinity's infinity_mode: either (default), positive, negative": the rows' attributes --mode sets."""
    parts = []
    for spec in OPERATORS:
        attribute = spec.mode_attribute
        if attribute is not None:
            values = ", ".join(value.name.lower() + (" (default)" if value == attribute.default else "")
                               for value in attribute.values)
            parts.append(f"{spec.numpy_name}'s {attribute.name}: {values}")
    return "; ".join(parts)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Benchmarks of gpuops' DirectML element-wise operators on WebGPU, "
                                            "checked bit for bit against NumPy before they are timed, and a runner "
                                            "for DirectML's DxDispatch model files. Without a command: the short "
                                            "default benchmark ('default').",
                     formatter_class=argparse.RawDescriptionHelpFormatter,
                     epilog=EXIT_STATUS_HELP)
    parser.add_argument("--version", action="version", version=version_line(),
                        help="print the distribution name and version, and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    device_options = _Parser(add_help=False)
    device_options.add_argument("-a", "--adapter", metavar="NAME",
                                help="adapter by name substring (see 'adapters'); default: the best one found")
    device_options.add_argument("--feature-level", type=_feature_level, default=FeatureLevel.LEVEL_6_4,
                                metavar="LEVEL", help="DirectML feature level, e.g. 6.4 (default), 3.0, 2.1")
    device_options.add_argument("--backend", choices=tuple(BACKENDS),
                                help=f"WebGPU implementation (default: ${BACKEND_ENV}, else wgpu-native)")
    device_options.add_argument("--runtime-checks", action="store_true", default=None,
                                help="keep the safety code WebGPU adds to shaders (index clamps, loop bounds; "
                                     f"default: ${RUNTIME_CHECKS_ENV}, else left out where the backend can)")
    default = commands.add_parser("default", parents=[device_options, _timing_options(20, 3)],
                                  help="a short benchmark of every operator: a readable table (the default command)",
                                  description="Every operator on a few data types at one size (2^22 elements on "
                                              "a software adapter, 2^26 on a GPU), as a table.")
    default.add_argument("--ops", nargs="+", action="extend", metavar="OP", help="operators (default: every one)")
    default.add_argument("--dtypes", nargs="+", action="extend", metavar="TYPE",
                         help=f"data types (default: {', '.join(DEFAULT_DTYPES)}, where supported)")
    default.add_argument("--elements", type=_elements, metavar="N", help="elements per tensor")
    default.set_defaults(handler=run_default)

    adapters = commands.add_parser("adapters", help="list every WebGPU adapter with its limits and features",
                                   description="Every adapter wgpu finds: backend, type, driver, the limits gpuops "
                                               "uses and the features.")
    adapters.add_argument("--backend", choices=tuple(BACKENDS),
                          help="only this WebGPU implementation (default: every one installed)")
    adapters.set_defaults(handler=run_adapters)

    op = commands.add_parser("op", parents=[device_options, _timing_options(20, 3)], help="check and time one operator",
                             description="Check one operator against NumPy, then time it: GPU time from timestamp "
                                         "queries (median, min, max), bandwidth of the element bytes read and "
                                         "written, that bandwidth as a percentage of a plain WGSL copy measured in "
                                         "the same run, and host time per dispatch.\n\nlayouts:\n"
                                         + "\n".join(f"  {k:12s} {v}" for k, v in LAYOUT_HELP.items()),
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    op.add_argument("operator", metavar="OPERATOR",
                    help=f"{', '.join(spec.numpy_name for spec in OPERATORS)} (or DML_OPERATOR_... names)")
    op.add_argument("--dtype", default="float32", metavar="TYPE", help="input data type (default float32)")
    op.add_argument("--out-dtype", metavar="TYPE",
                    help=f"output data type (default: {_output_defaults()}, else the input's)")
    op.add_argument("--sizes", type=_sizes, default=(1024, 1024), metavar="N,N,...",
                    help="tensor sizes (default 1024,1024)")
    op.add_argument("--layout", choices=LAYOUTS, default="packed", help="memory layout (default packed)")
    op.add_argument("--strides", type=_positive_ints, metavar="S,S,...",
                    help="explicit element strides of the inputs (the output stays packed, or NHWC with --layout "
                         "nchw-to-nhwc)")
    op.add_argument("--mode", metavar="MODE", help=_mode_help())
    op.set_defaults(handler=run_op)

    sweep = commands.add_parser("sweep", parents=[device_options, _timing_options(10, 2, "gpuops-sweep.json")],
                                help="every operator x data type x size, with JSON and a plot",
                                description="Every operator x data type x size from 2^10 elements up to the limit "
                                            "(2^16 on a software adapter; up to 2^28 on a GPU, as far as the "
                                            "adapter's buffers and host memory allow). Prints a table and writes "
                                            "JSON and, when matplotlib is installed, a PNG of bandwidth against "
                                            "size.")
    sweep.add_argument("--ops", nargs="+", action="extend", metavar="OP", help="operators (default: every one)")
    sweep.add_argument("--dtypes", nargs="+", action="extend", metavar="TYPE",
                       help="data types (default: every type each operator supports)")
    sweep.add_argument("--max-elements", type=_elements, metavar="N", help="largest size (e.g. 4096, 2^24)")
    sweep.add_argument("--min-elements", type=_elements, default=SWEEP_MIN, metavar="N",
                       help="smallest size (default 2^10)")
    sweep.add_argument("--layout", choices=LAYOUTS, default="packed", help="memory layout (default packed)")
    sweep.add_argument("--mode", metavar="MODE", help=_mode_help())
    sweep.add_argument("--plot", metavar="FILE.png", help="plot file (default: the JSON file's name, .png)")
    sweep.set_defaults(handler=run_sweep)

    goals = commands.add_parser("targets", parents=[device_options],
                                help="the performance goals (docs/performance.md) beside PyTorch, and their tables",
                                description="The performance goals' measurements (docs/performance.md): every "
                                            "operator, mode and type pair contiguous, the layouts section (packed "
                                            "2-D, broadcast, transposed into a row-major output, NCHW into NHWC, "
                                            "strided output) and host-side costs, each row checked against NumPy "
                                            "before it is timed, and PyTorch (and CuPy, for the layout conversions) "
                                            "timed on the same data doing the same work where importable. Prints "
                                            "the tables; --json writes the document (docs/bench-json.md), --render "
                                            "prints the tables of documents written before.",
                                epilog="e.g. gpuops-bench targets --render bench/results/h200-dawn-targets.json "
                                       "bench/results/h200-dawn-layouts.json")
    goals.add_argument("--json", metavar="FILE", help="write the results as JSON (layout: docs/bench-json.md)")
    goals.add_argument("--elements", type=_elements, default=targets.DEFAULT_ELEMENTS, metavar="N",
                       help="elements of the contiguous rows and of the layouts' cases (default 2^26)")
    goals.add_argument("--same-elements", action="store_true",
                       help="contiguous rows at --elements each (default: narrow types at the copy's tensor bytes)")
    _sampling_options(goals, 10, 2, "row")
    goals.add_argument("--repeats", type=_count(1), default=1, metavar="N",
                       help="passes per timed span, for timestamps rounded to coarse steps (default 1; 40 for those)")
    goals.add_argument("--match", metavar="REGEX",
                       help="measure only the rows whose label (as 'sign int8') matches this regex")
    goals.add_argument("--units-per-invocation", type=_count(1), metavar="N",
                       help="tuning experiments: override the kernels' units per invocation (DispatchPolicy)")
    goals.add_argument("--only", nargs="+", default=list(targets.SECTIONS), choices=targets.SECTIONS,
                       metavar="SECTION", help=f"sections to measure: {', '.join(targets.SECTIONS)} (default: all)")
    goals.add_argument("--layouts", nargs="+", default=list(targets.LAYOUT_SECTIONS),
                       choices=targets.LAYOUT_SECTIONS, metavar="CASE",
                       help=f"cases of the layouts section: {', '.join(targets.LAYOUT_SECTIONS)} (default: all; "
                            "packed-2d is the others' reference)")
    goals.add_argument("--data", choices=tuple(targets.DATA_SETS), default="goals",
                       help="the rows' values (default goals): goals: the goals' data (normal floats with 0.1%% inf "
                            "and 0.1%% NaN, integers over the full range); "
                            + _data_help())
    goals.add_argument("--render", nargs="+", metavar="FILE",
                       help="print the tables of these targets documents (later files' rows replace earlier ones') "
                            "and measure nothing")
    goals.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    goals.set_defaults(handler=run_targets)

    compare = commands.add_parser("compare", help="compare two runs' JSON, row by row, beyond their noise",
                                  description="Compare two JSON files of 'default', 'op' or 'sweep' runs (--json) "
                                              "on the same adapter, or two of 'targets' runs: every case in both "
                                              "(in targets runs, every timed figure), its ratio of medians NEW / "
                                              "BASE with a bootstrap interval and a Mann-Whitney U test on the "
                                              "samples. A case is marked slower or faster only beyond the noise: "
                                              "the test's p below --alpha and a change above both rows' noise and "
                                              "--min-change. In targets runs the copies and PyTorch's and CuPy's "
                                              "figures are references: they never fail --fail-above.",
                                  epilog=EXIT_STATUS_HELP)
    compare.add_argument("base", metavar="BASE.json", help="the run before")
    compare.add_argument("new", metavar="NEW.json", help="the run after")
    compare.add_argument("--fail-above", type=_percent, metavar="PCT",
                         help="exit with status 1 when a case is marked slower by more than this, e.g. 2%%")
    compare.add_argument("--min-change", type=_percent, default=compare_runs.DEFAULT_MIN_CHANGE, metavar="PCT",
                         help=f"never mark a smaller change (default {compare_runs.DEFAULT_MIN_CHANGE:.0%}%)")
    compare.add_argument("--alpha", type=_probability, default=compare_runs.DEFAULT_ALPHA, metavar="P",
                         help=f"the rank test's significance level (default {compare_runs.DEFAULT_ALPHA:g})")
    compare.add_argument("--host", action="store_true",
                         help="compare host time per dispatch instead of GPU time")
    compare.add_argument("--allow-different-adapters", action="store_true",
                         help="compare runs of different adapters or WebGPU implementations (refused otherwise)")
    compare.set_defaults(handler=run_compare)

    model = commands.add_parser("model", help="run a DxDispatch model file (.json)",
                                description="Run a DirectML DxDispatch model for gpuops' operators: "
                                            "resources, dispatchables and dispatch/print/writeFile commands. Flags "
                                            "mean what they mean in DxDispatch.")
    model.add_argument("file", nargs="?", metavar="MODEL.json", help="the model file")
    model.add_argument("-o", "--output-dir", metavar="DIR",
                       help="where writeFile commands write relative target paths (default: the current "
                            "directory); each file written is printed")
    model.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    model.add_argument("-i", "--dispatch_iterations", dest="iterations", type=_count(1), default=1, metavar="N",
                       help="iterations of bind/dispatch/wait per dispatch command (default 1)")
    model.add_argument("-r", "--dispatch_repeat", dest="repeat", type=_count(1), default=1, metavar="N",
                       help="dispatches per iteration; times are per dispatch (default 1)")
    model.add_argument("-t", "--milliseconds_to_run", dest="milliseconds", type=_milliseconds, metavar="MS",
                       help="run each dispatch command for this long instead of -i iterations, and on until a "
                            "sample follows the -w cold ones")
    model.add_argument("-w", "--warmup_samples", dest="warmup", type=_count(0), default=1, metavar="N",
                       help="leading samples counted as cold, left out of the medians unless every sample is "
                            "(default 1)")
    model.add_argument("-v", "--timing_verbosity", dest="verbosity", type=int, choices=(0, 1, 2), default=0,
                       help="0: one line per dispatch; 1: initialization, cold and hot statistics; "
                            "2: also every iteration")
    model.add_argument("-a", "--adapter", metavar="NAME", help="adapter by name substring")
    model.add_argument("--backend", choices=tuple(BACKENDS),
                       help=f"WebGPU implementation (default: ${BACKEND_ENV}, else wgpu-native)")
    model.add_argument("--runtime-checks", action="store_true", default=None,
                       help="keep the safety code WebGPU adds to shaders (default: left out where the backend can)")
    model.add_argument("-s", "--show_adapters", action="store_true", help="list the adapters and exit")
    model.add_argument("--dml_feature_level", "--feature-level", dest="feature_level", type=_feature_level,
                       default=FeatureLevel.LEVEL_6_4, metavar="LEVEL", help="DirectML feature level (default 6.4)")
    model.set_defaults(handler=run_model)
    return parser


def version_line() -> str:
    """'gpuops-webgpu 0.1.0': the installed distribution's version, else the package's own (run from a checkout)."""
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = __version__
    return f"{DISTRIBUTION} {version}"


def main(argv: list[str] | None = None) -> int:
    """The console script; returns the exit status (0 ok, 1 a wrong result or a regression, 2 a usage error, 3 what
    the installation or the machine cannot do)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["default"] + argv  # the main job: `gpuops-bench` alone runs the default benchmark
    try:
        args = build_parser().parse_args(_negative_values_attached(argv))
        return args.handler(args)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except KeyboardInterrupt:
        return _error("interrupted", 130)
    except DeviceError as exc:
        return _error(str(exc), EXIT_ENVIRONMENT)
    except GpuOpsError as exc:
        return _error(str(exc))
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        sys.stdout = open(os.devnull, "w")
        return EXIT_OK
    except MemoryError:
        return _error("out of host memory; try fewer elements", EXIT_ENVIRONMENT)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        status = EXIT_ENVIRONMENT if exc.filename is None or _installed_file(exc.filename) else EXIT_USAGE
        return _error(f"cannot access{where}: {exc.strerror or exc}", status)
    except Exception as exc:  # a WebGPU implementation's own error (wgpu's or Dawn's GPUError): one line too
        if any(cls.__name__ == "GPUError" for cls in type(exc).__mro__):
            first_line = (str(exc).strip().splitlines() or [""])[0]
            return _error(f"WebGPU: {type(exc).__name__}: {first_line}", EXIT_ENVIRONMENT)
        raise


def _installed_file(filename) -> bool:
    """Whether a path is one of gpuops' own files (its package, its shaders), not one the user named."""
    path = Path(os.fsdecode(filename)).absolute()
    return any(path.is_relative_to(root) for root in (PACKAGE_DIR, shaders.WGSL_DIR))


def _negative_values_attached(argv: list[str]) -> list[str]:
    """'--sizes -5,3' as '--sizes=-5,3': argparse takes a word starting with '-' for an option unless it is one
    plain negative number, so such a value would be reported missing instead of refused for what it is. No option
    of gpuops-bench starts with '-' and a digit."""
    out: list[str] = []
    for word in argv:
        previous = out[-1] if out else ""
        if re.match(r"-\d", word) and previous.startswith("-") and "=" not in previous \
                and previous not in ("-", "--"):
            out[-1] = f"{previous}={word}"
        else:
            out.append(word)
    return out


def _error(message: str, status: int = EXIT_USAGE) -> int:
    first, *rest = str(message).strip().splitlines() or [""]
    print(f"{PROG}: error: {first}" + (f" ({' '.join(s.strip() for s in rest)})" if rest else ""), file=sys.stderr)
    return status


# ------------------------------------------------------------------------------------------------- commands

def run_adapters(args) -> int:
    names = [args.backend] if getattr(args, "backend", None) else installed_backends()
    listed = 0
    for name in names:
        api = load_backend(name)
        adapters = api.gpu.enumerate_adapters_sync()
        preferred = api.gpu.request_adapter_sync(power_preference="high-performance")
        preferred_info = dict(preferred.info) if preferred is not None else None
        print(f"{name} ({api.__name__} {getattr(api, '__version__', '?')}): {len(adapters)} adapter(s), "
              "[index] as Device(adapter=index) and GPUOPS_ADAPTER=index pick them")
        for index, adapter in enumerate(adapters):
            _print_adapter(index, adapter, preferred_info)
        listed += len(adapters)
    if not listed:
        return _error("no WebGPU adapter found (install a Vulkan driver, e.g. mesa-vulkan-drivers)")
    return EXIT_OK


def _print_adapter(index: int, adapter, preferred_info: dict | None) -> None:
    info = report.adapter_info(adapter)
    marker = "  (default)" if preferred_info is not None and dict(adapter.info) == preferred_info else ""
    print(f"[{index}] {info['name']}{marker}")
    print(f"    backend: {info['backend']}   type: {info['type']}   vendor: {info['vendor'] or '-'} "
          f"(0x{info['vendor_id']:04x})   device id: 0x{info['device_id']:04x}")
    print(f"    driver: {info['driver'] or '-'}")
    print("    limits: " + ", ".join(f"{name} {value}" for name, value in info["limits"].items()))
    print("    features: " + _wrapped(info["features"], indent=14))
    timestamps = "yes" if "timestamp-query" in info["features"] else "no (host times only)"
    print(f"    GPU timestamps: {timestamps}")


def _wrapped(words: list[str], indent: int, width: int = 110) -> str:
    lines, line = [], ""
    for word in words:
        if line and len(line) + len(word) + 2 > width - indent:
            lines.append(line + ",")
            line = word
        else:
            line = f"{line}, {word}" if line else word
    lines.append(line)
    return ("\n" + " " * indent).join(lines) if words else "-"


def _device(args, policy: DispatchPolicy | None = None) -> Device:
    backend = getattr(args, "backend", None)
    exact_timestamps_for(backend)  # (where it cannot, the timestamp conversion's note says so)
    with _slow(args, "opening the adapter"):
        return Device(args.feature_level, adapter=args.adapter, backend=backend,
                      runtime_checks=getattr(args, "runtime_checks", None), policy=policy)


def _slow(args, message: str):
    """A line on stderr if the step takes more than report.SLOW_SECONDS (none with --quiet)."""
    return report.slow_step(message, enabled=not getattr(args, "quiet", False))


def _caches(args) -> tuple[str, ...]:
    return CACHES if args.cache == "both" else (args.cache,)


def _open_session(args, device: Device, compare: tuple[str, ...]) -> Session:
    rule = StoppingRule(args.iterations, args.max_noise, args.max_time)
    with _slow(args, "calibrating GPU timestamps against the host clock"):
        return Session.open(device, rule, args.warmup, compare, args.cuda_context, args.repeats, _caches(args),
                            args.flush_bytes, args.data)


def _sampling_words(args) -> str:
    """'20 samples after 3 warm-up' or '20 samples or more, to 1% noise or 1 s, after 3 warm-up'; ', cold'."""
    words = f"{args.iterations} samples"
    if args.max_noise is not None:
        words += f" or more, to {report.format_noise(args.max_noise)} noise or {args.max_time:g} s,"
    words += f" after {args.warmup} warm-up"
    cache = getattr(args, "cache", "warm")  # (targets has no cold samples)
    return words + ("" if cache == "warm" else f", caches {' and '.join(_caches(args))}")


def _pairs(args, layout: str = "packed", mode: str | None = None, default_dtypes=None):
    """The operator x data type pairs to run, checked before any device work: an unknown operator, type, mode or
    layout fails at once; each pair asked for that an operator does not support is returned as a line to print."""
    pairs, skipped = select_pairs(operator_names(_flat(args.ops)), _flat(args.dtypes), args.feature_level, layout,
                                  default_dtypes)
    cases_for(pairs, layout_sizes(layout), [SWEEP_MIN], layout, mode)  # make_case's checks, on a small size
    return pairs, skipped


def _header(device: Device, session: Session, what: str) -> None:
    print(f"{PROG} {what}")
    print(f"adapter: {device.adapter_name}; driver: {device.adapter.info.get('description') or '-'}; "
          f"feature level {device.feature_level.label}; "
          f"shader runtime checks {'kept' if device.runtime_checks else 'left out'}")
    print(f"timestamps: {session.conversion.note}")
    if session.cuda_held:
        print("CUDA context: held during the run")


def _progress(args):
    return None if args.quiet else report.progress


def _finish(args, command: str, session: Session, results: list[dict], notes: list[str], **settings) -> int:
    """Table, notes, JSON; status 1 when any case differed from NumPy."""
    session.close()
    print()
    print(report.results_table(results, session.compare, session.floor_ns))
    print()
    run_settings = session.settings(**settings)
    for note in report.table_notes(results, session.compare, session.floor_ns, run_settings) + session.notes() + notes:
        print(f"note: {note}")
    if args.json:
        doc = report.document(command, session.device, session.conversion, run_settings, results,
                              session.roof.entries())
        path = report.write_json(args.json, doc)
        print(f"note: results written to {path}")
    wrong = [r for r in results if not r["exact"] and r["cache"] == session.caches[0]]  # a case once
    for row in wrong:
        _error(f"wrong result, not timed: {row['operator']} {row['dtype']}->{row['output_dtype']} sizes "
               f"{row['sizes']} layout {row['layout']}: {row['error']}", EXIT_WRONG_RESULT)
    return EXIT_WRONG_RESULT if wrong else EXIT_OK


def run_op(args) -> int:
    case = make_case(args.operator, args.dtype, args.sizes, args.layout, args.mode, args.out_dtype, args.strides)
    validate(make_desc(case), args.feature_level)  # a description the operator refuses fails before the device opens
    compare = _compare(args.compare)
    device = _device(args)
    session = _open_session(args, device, compare)
    _header(device, session, f"op: {case.label} {case.dtype.name.lower()} -> {case.out_dtype.name.lower()}, "
                             f"sizes {list(case.sizes)}, layout {case.layout_label}, {_sampling_words(args)}")
    session.reserve([case])
    with _slow(args, f"op: checking {case.label} {case.dtype.name.lower()} {'x'.join(map(str, case.sizes))} "
                     f"against NumPy, then timing {args.iterations} samples"):
        rows = session.run(case)
    if rows[0]["exact"]:
        print(f"check: exact against NumPy ({rows[0]['elements']} elements), then timed")
    return _finish(args, "op", session, rows, [], case={"operator": case.operator, "layout": case.layout_label})


def run_default(args) -> int:
    pairs, skipped = _pairs(args, default_dtypes=DEFAULT_DTYPES)
    compare = _compare(args.compare)
    device = _device(args)
    elements = args.elements or default_elements(device)
    cases = cases_for(pairs, lambda n: (n,), [elements])
    session = _open_session(args, device, compare)
    _header(device, session, f"default benchmark: {len(cases)} cases of {elements} elements, "
                             f"{_sampling_words(args)}")
    for line in skipped:
        print(line)
    results, notes = run_cases(session, cases, _progress(args))
    return _finish(args, "default", session, results, notes, elements=elements)


def _sweep_counts(smallest: int, largest: int) -> list[int]:
    """The sweep's sizes: the powers of two from `smallest` (rounded up) to `largest`."""
    if smallest > largest:
        raise UsageError(f"--min-elements {smallest} is above the largest size {largest}")
    counts = []
    count = 1 << (smallest - 1).bit_length()
    while count <= largest:
        counts.append(count)
        count *= 2
    if not counts:
        raise UsageError(f"no power of two lies between --min-elements {smallest} and the largest size {largest}")
    return counts


def run_sweep(args) -> int:
    pairs, skipped = _pairs(args, args.layout, args.mode)
    compare = _compare(args.compare)
    if args.max_elements is not None:
        _sweep_counts(args.min_elements, sweep_limit(None, args.max_elements))  # bounds, before the device opens
    device = _device(args)
    counts = _sweep_counts(args.min_elements, sweep_limit(device, args.max_elements))
    cases = cases_for(pairs, layout_sizes(args.layout), counts, layout=args.layout, mode=args.mode)
    session = _open_session(args, device, compare)
    _header(device, session, f"sweep: {len(cases)} cases, {counts[0]} to {counts[-1]} elements, layout "
                             f"{args.layout}, {_sampling_words(args)}")
    for line in skipped:
        print(line)
    results, notes = run_cases(session, cases, _progress(args))
    status = _finish(args, "sweep", session, results, notes, layout=args.layout, min_elements=counts[0],
                     max_elements=counts[-1])
    plot = args.plot or (str(Path(args.json).with_suffix(".png")) if args.json else None)
    if plot:
        run_name = f"{device.adapter_name}, {device.backend}"
        print(f"note: {plot_sweep(results, session.roof.entries(), plot, run_name)}")
    return status


def run_targets(args) -> int:
    if args.render:
        print(targets.render(args.render))
        return EXIT_OK
    if args.match is not None:
        try:
            re.compile(args.match)
        except re.error as exc:
            raise UsageError(f"--match {args.match!r} is not a regular expression: {exc}") from None
    options = targets.TargetOptions(
        elements=args.elements, same_elements=args.same_elements, iterations=args.iterations, warmup=args.warmup,
        repeats=args.repeats, max_noise=args.max_noise, max_time_s=args.max_time, match=args.match,
        sections=tuple(args.only), layouts=tuple(args.layouts), units_per_invocation=args.units_per_invocation,
        data=args.data)
    device = _device(args, DispatchPolicy(units_per_invocation=args.units_per_invocation))
    print(f"{PROG} targets: {', '.join(options.sections)} at {options.elements} elements, {_sampling_words(args)}, "
          f"{options.repeats} pass(es) per timed span")
    print(f"adapter: {device.adapter_name}; driver: {device.adapter.info.get('description') or '-'}; "
          f"feature level {device.feature_level.label}; "
          f"shader runtime checks {'kept' if device.runtime_checks else 'left out'}", flush=True)

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    doc = targets.measure(device, options, say)
    print(f"timestamps: {doc['timestamp_conversion']['note']}")
    print()
    print(targets.render_documents([doc]))
    if args.json:
        print(f"note: results written to {report.write_json(args.json, doc)}")
    wrong = targets.wrong_rows(doc)
    for row in wrong:
        _error(f"wrong result, not timed: {targets.label(row)} sizes {row['sizes']} strides {row['strides']}: "
               f"{row['error']}", EXIT_WRONG_RESULT)
    return EXIT_WRONG_RESULT if wrong else EXIT_OK


def run_compare(args) -> int:
    options = compare_runs.CompareOptions(args.fail_above, args.alpha, args.min_change, args.host,
                                          args.allow_different_adapters)
    names = (str(args.base), str(args.new))
    base, new = compare_runs.load(args.base), compare_runs.load(args.new)
    comparison = compare_runs.compare_documents(base, new, options, names)
    print(compare_runs.render(comparison, base, new, names, options))
    failed = compare_runs.failures(comparison)
    if failed:
        cases = "; ".join(f"{compare_runs.case_label(c.row)} {100 * c.change:+.1f}%" for c in failed)
        return _error(f"{len(failed)} case(s) slower than {args.base} by more than {args.fail_above:.1%}, beyond "
                      f"the noise: {cases}", EXIT_WRONG_RESULT)
    return EXIT_OK


def run_model(args) -> int:
    if args.show_adapters:
        return run_adapters(args)
    if not args.file:
        raise UsageError("model: give a model file (MODEL.json), or -s to list the adapters")
    if args.output_dir is not None and Path(args.output_dir).exists() and not Path(args.output_dir).is_dir():
        raise UsageError(f"--output-dir {args.output_dir!r} is not a directory")
    try:
        model = load_model(args.file, args.feature_level)
        device = _device(args)
        print(f"Running on '{device.adapter.info.get('device', device.adapter_name)}'")
        timer = GpuTimer(device)
        if any(isinstance(c, DispatchCommand) for c in model.commands):
            with _slow(args, "calibrating GPU timestamps against the host clock"):
                conversion = calibrate(device, timer)
            if conversion.tick_ns is None:
                timer.supported = False
            if args.verbosity >= 1:
                print(f"Timestamps: {conversion.note}")
        options = RunOptions(args.iterations, args.repeat, args.warmup, args.milliseconds, args.verbosity)
        ModelRunner(model, device, options, timer=timer, output_dir=args.output_dir,
                    slow=lambda message: _slow(args, message)).run()
    except ModelError as exc:
        return _error(f"{args.file}: {exc}")
    return EXIT_OK
