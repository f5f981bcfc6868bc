"""L6's command-line options (UOT-DRO on noisy MNIST): the gpu tier's size and device (a nightly runs all of it, a
short check a slice), where a CPU unit evaluates, and --l6-evidence, the committed paper-scale units a run decides
from (checked as `python -m tools.l6_evidence check` checks them, or one line and no run). What they set goes to
the stash keys of workloads.uot_dro, which sizes and runs the tier's programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from workloads import uot_dro as fx


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("claims-l6", "L6 (UOT-DRO on noisy MNIST): size of the gpu tier")
    group.addoption(
        "--l6-steps", default=None, help=f"SGD steps per run in the gpu tier (default {fx.PAPER_STEPS}, the paper's)"
    )
    group.addoption(
        "--l6-seeds", default=None, help=f"seeds per setting in the gpu tier (default {fx.PAPER_SEEDS}, the paper's)"
    )
    group.addoption(
        "--l6-device",
        default=None,
        choices=fx.GPU_DEVICES,
        help="device of the gpu tier's L6 runs: cuda (one batched program; default) or cpu (one work unit per run, "
        "spread over cores with -n; one torch thread each unless $CLAIMS_TORCH_THREADS says otherwise, and a second "
        "thread evaluating the checkpoints while the run trains; the default under --gpu-rehearsal)",
    )
    group.addoption(
        "--l6-evidence",
        default=None,
        metavar="DIR",
        help="decide the gpu tier's L6 from the paper-scale CPU units committed in DIR (evidence/l6-paper): each "
        "unit is read from DIR/store and never computed; a missing one is named, and a statement that needs it is "
        "skipped, saying so (implies --l6-device cpu at the paper's scale)",
    )
    group.addoption(
        "--l6-evaluations",
        default="aside",
        choices=("aside", "inline"),
        help="where a CPU unit of the gpu tier evaluates its checkpoints: aside (a second thread while it trains; "
        "default) or inline (between its steps: faster where every core runs a unit of its own)",
    )
    group.addoption(
        "--l6-test-images",
        default=None,
        help=f"clean test (and noisy validation) images of the accuracies in the gpu tier (default "
        f"{fx.SIZES['gpu'].test_images})",
    )
    group.addoption(
        "--l6-objective-images",
        default=None,
        help=f"training images F(theta) is evaluated on in the gpu tier (default {fx.SIZES['gpu'].objective_images}; "
        "the authors used all 50000)",
    )


def _positive(config: pytest.Config, name: str, default: int, most: int) -> int:
    raw = config.getoption(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise pytest.UsageError(f"{name} must be a positive integer, got {raw!r}") from None
    if not 1 <= value <= most:
        raise pytest.UsageError(f"{name} must be an integer from 1 to {most}, got {value}")
    return value


def pytest_configure(config: pytest.Config) -> None:
    try:
        fx.torch_threads()
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    paper = fx.SIZES["gpu"]
    # A rehearsal's slice unless the --l6-* options say otherwise; the paper's scale otherwise
    rehearsal = config.getoption("--gpu-rehearsal")
    default = fx.REHEARSAL_SLICE if rehearsal else paper
    steps = _positive(config, "--l6-steps", default.steps, 10_000_000)
    seeds = _positive(config, "--l6-seeds", default.seeds, 1000)
    images = _positive(config, "--l6-objective-images", default.objective_images, fx.mnist.TRAIN_SIZE)
    test_images = _positive(config, "--l6-test-images", default.test_images, 10_000)
    device = config.getoption("--l6-device") or ("cpu" if rehearsal else "cuda")
    evidence = _evidence_folder(config)
    if evidence is not None:
        if config.getoption("--l6-device") == "cuda" or rehearsal:
            raise pytest.UsageError(
                "--l6-evidence reads CPU units: it cannot go with --l6-device cuda or --gpu-rehearsal"
            )
        device = config.option.l6_device = "cpu"  # as if --l6-device cpu were given (its CPU units need no CUDA)
        if not fx.paper_scale(fx.gpu_tier_size(steps, seeds, images, test_images, device)):
            raise pytest.UsageError(
                "--l6-evidence holds units at the paper's scale: leave out --l6-steps, --l6-seeds, "
                "--l6-objective-images and --l6-test-images"
            )
        if not hasattr(config, "workerinput"):
            _check_evidence(config, evidence)
    config.stash[fx.EVIDENCE_KEY] = evidence
    config.stash[fx.GPU_DEVICE_KEY] = device
    config.stash[fx.GPU_SIZE_KEY] = fx.gpu_tier_size(steps, seeds, images, test_images, device)


def _check_evidence(config: pytest.Config, folder: Path) -> None:
    """The deciding run trusts the units only as `python -m tools.l6_evidence check` does (and the
    continuation's `check`): the same validation, or one line and no run."""
    import os

    from tools import l6_continuation, l6_evidence

    data_dir = config.getoption("--data-dir") or os.environ.get("CLAIMS_DATA_DIR")
    continuation = folder.parent / "l6-continuation"
    try:
        l6_evidence.check(data_dir, folder)
        # the required continued statements decide from it: without it they would read no look and stay running
        l6_continuation.check(continuation)
    except l6_evidence.Stale as error:
        raise pytest.UsageError(f"--l6-evidence: the committed units fail their check: {error}") from None


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """With --l6-evidence: one line of which paper-scale units the folder holds (the statements say what each needs)."""
    folder = config.stash.get(fx.EVIDENCE_KEY, None)
    if folder is None or hasattr(config, "workerinput"):
        return
    from tools import l6_evidence

    units = l6_evidence.units()
    missing = [u for u in units if not l6_evidence.entry_path(u, folder / "store").is_file()]
    seeds: dict[str, list[int]] = {}
    for unit in missing:
        seeds.setdefault(fx.setting_name(unit.method, unit.lr), []).append(unit.seed)
    named = "; ".join(f"{name} seeds {', '.join(map(str, found))}" for name, found in seeds.items())
    from tools import l6_continuation

    store = folder.parent / "l6-continuation" / "store"
    continued = len(l6_continuation.present(store))
    # every unit in the folder is read and checked at configure; each chain decides from fewer (its looks' seeds)
    used = ", ".join(f"{name} {chain.units_read}" for name, chain in l6_continuation.chains(store).items())
    terminalreporter.write_line(
        f"L6 at the paper's scale: {len(units) - len(missing)} of {len(units)} units in {folder}, read and never "
        f"computed"
        + (f"; missing: {named}" if missing else "")
        + f"; {continued} continuation units read and checked, of which the chains decide from: {used}"
    )


def _evidence_folder(config: pytest.Config) -> Path | None:
    """--l6-evidence's folder (relative to the rootdir), which must hold a store folder: one line if not."""
    raw = config.getoption("--l6-evidence")
    if raw is None:
        return None
    folder = Path(config.rootpath, raw).resolve()
    if not (folder / "store").is_dir():
        raise pytest.UsageError(f"--l6-evidence={raw}: {folder} holds no store folder of units (evidence/l6-paper)")
    return folder
