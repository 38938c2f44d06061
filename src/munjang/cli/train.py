"""`munjang train`: fine-tune as a YAML config says, and optionally install the result under a name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer()


def _print_plan(info: dict[str, Any]) -> None:
    """The run as `munjang train` will do it: model, tasks, evaluators, steps, output folder."""

    def count(n: int | None, unit: str) -> str:
        return f"{n:,} {unit}" if n is not None else unit

    typer.echo(f"config     {info['config']}")
    typer.echo(f"model      {info['model']}")
    for task in info["tasks"]:
        options = json.dumps(task["loss_options"], ensure_ascii=False) if task["loss_options"] else ""
        loss = f"{task['loss']} {options}".strip()
        if "wraps" in task:
            inner = json.dumps(task["wrapped_options"], ensure_ascii=False) if task["wrapped_options"] else ""
            loss += f" around {task['wraps']} {inner}".rstrip()
        examples = count(task["examples"], f"{task['format']} examples")
        typer.echo(f"task       {task['name']}: {examples} from {task['path']}; loss {loss}")
    for ev in info["evaluators"]:
        name = f" {ev['name']}" if ev["name"] and ev["name"] != ev["type"] else ""
        items = count(ev["size"], "triplets" if ev["type"] == "triplet" else "pairs")
        typer.echo(f"evaluator  {ev['type']}{name}: {items} from {ev['path']}")
    if not info["evaluators"]:
        typer.echo("evaluator  none (best/ is not written)")
    args = info["training"]
    steps = f"{info['steps']:,} steps" if info["steps"] is not None else "steps not counted"
    typer.echo(
        f"training   {steps}: {args['epochs']} epoch(s), batch {args['batch_size']}, "
        f"learning rate {args['learning_rate']:g}"
    )
    typer.echo(f"output     {info['output_dir']}")


@app.command()
def train(
    config: Annotated[Path, typer.Option("--config", "-c", help="Training config (YAML); see examples/.")],
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the newest checkpoint in the output folder.")
    ] = False,
    output_dir: Annotated[
        Path | None, typer.Option("--output-dir", "-o", help="Write here instead of the config's output_dir.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check the config, its files and models; print the plan; stop.")
    ] = False,
    register: Annotated[
        str | None,
        typer.Option(
            help="Install the trained model (best/, else final/) under this name, for load_encoder(NAME) "
            "and `munjang serve --model NAME`.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="With --register: replace an installed model.")
    ] = False,
) -> None:
    """Fine-tune a model as a YAML config describes (tasks, losses, evaluator, arguments)."""
    import shlex

    from ..models.registry import check_name, installed_folder
    from ..training.checkpoint import list_checkpoints
    from ..training.config import build, load_config, run

    settings = load_config(config, output_dir=output_dir)
    if register is not None:
        check_name(register)
        if installed_folder(register) is not None and not force:
            raise ValueError(f"--register {register}: a model of that name is installed (add --force)")
    if dry_run:
        _, info = build(settings, dry_run=True)
        _print_plan(info)
        typer.echo("config OK (dry run: nothing read or trained)")
        return
    try:
        summary = run(settings, resume=resume, on_plan=_print_plan)
    except KeyboardInterrupt:
        if not list_checkpoints(settings.output_dir / "checkpoints"):
            raise
        again = ["munjang", "train", "--config", str(config)]
        if output_dir is not None:
            again += ["--output-dir", str(output_dir)]
        typer.echo(f"interrupted; to continue: {shlex.join([*again, '--resume'])}", err=True)
        raise typer.Exit(130) from None
    line = f"done: {summary['global_step']:,} steps in {summary['train_seconds']:.1f} s"
    if summary.get("best_metric") is not None:
        line += (
            f"; best {summary.get('best_metric_name') or 'metric'} {summary['best_metric']:.4f}"
            f" at step {summary['best_step']}"
        )
    typer.echo(line)
    for name, path in summary["outputs"].items():
        typer.echo(f"  {name:<12}{path}")
    if register is not None:
        _register_trained(register, settings, summary, force)


def _register_trained(name: str, settings: Any, summary: dict[str, Any], force: bool) -> None:
    """Install best/ (else final/) under `name`, its manifest carrying the run: base model, data,
    steps, time and the metrics at the step that was kept."""
    from ..models import register as register_model
    from ..models.catalog import find

    outputs = summary["outputs"]
    kept = "best" if "best" in outputs else "final"
    step = summary["best_step"] if kept == "best" else summary["global_step"]
    metrics: dict[str, float] = dict(summary.get("final_metrics") or {})
    log = Path(outputs.get("metrics", ""))
    if kept == "best" and log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("type") == "eval" and record.get("step") == step:
                metrics = {k: v for k, v in record.items() if k not in ("type", "step", "epoch")}
    details = {
        "summary": f"trained by munjang from {settings.model.value}",
        "base_model": settings.model.value,
        "config": str(settings.source),
        "kept": f"{kept}/ (step {step} of {summary['global_step']})",
        "train_seconds": round(summary["train_seconds"], 1),
        "tasks": [f"{t.name}: {t.data.path.name}, {t.loss.name}" for t in settings.tasks],
        "metrics": {k: round(float(v), 6) for k, v in metrics.items()},
    }
    base = find(str(settings.model.value))
    if base is not None:
        details.update(languages=base.languages, dimensions=base.dimensions)
    folder = register_model(name, outputs[kept], details=details, force=force, echo=typer.echo)
    typer.echo(f"load it with munjang.load_encoder({name!r}) or `munjang serve --model {name}` ({folder})")
