"""What `calipers run` checks before the first pipeline or judge call: every part of its
configuration that can be known wrong without running anything (exit 1, nothing stored).

Checked elsewhere, as early: the suite file (`suite.load_suite`), the judges' specs and
endpoints (`grading.judges.judge_from_spec`), the numbers of the options (finite, in range:
`cli.options.FiniteRange`)."""

from __future__ import annotations

from calipers.errors import InputError
from calipers.running.judging import JudgeOptions
from calipers.running.suite import Suite
from calipers.running.template import PLACEHOLDERS, parse_command
from calipers.schemes.rubric.definition import load_rubric


def check_run(suite: Suite, command: str, *, stdio: bool, judging: JudgeOptions) -> None:
    """Raise `InputError` for a configuration that would fail every sample: a command without
    {input} and {output} (files mode; its braces checked by the one template engine), the
    placeholders given with --stdio (the command runs as written, so they would reach the
    pipeline as text), or a task's rubric that cannot be read while judges are asked for."""
    if not stdio:
        # the output contract of files mode: the task's input at {input}, the JSON at {output};
        # a command without them fails every invocation (kelvin refuses it too)
        parse_command(command, where="`pipeline`", parameters=["pipeline"])
    else:
        given = [f"{{{name}}}" for name in PLACEHOLDERS if f"{{{name}}}" in command]
        if given:
            raise InputError(
                f"--pipeline has {' and '.join(given)} but --stdio runs the command as written: "
                "the input comes on stdin and the JSON goes to stdout, so the placeholders would "
                "reach the pipeline as text",
                hint="Drop --stdio to have {input} and {output} filled with file paths, or drop "
                "the placeholders and read stdin.",
            )
    if judging.judges:
        for task in suite.tasks:
            if task.rubric:
                load_rubric(suite.path.parent / task.rubric)  # raises InputError, file and line
