"""``python -m phasebench.reference.lm_eval_cli ARGS``: lm-eval's own CLI, able to load the
reference models with ``--model hf --model_args pretrained=FOLDER``.

lm-eval's ``hf`` backend loads a model through ``AutoConfig``/``AutoModelForCausalLM``; this
entry point registers the ``phasebench_ref`` architecture with them first and then hands the
command line to lm-eval unchanged. No ``trust_remote_code`` and no import-time side effect: the
registration happens here, when this command runs.
"""

from __future__ import annotations


def main() -> None:
    from phasebench import lmeval_compat as compat
    from phasebench.reference.model import register_auto_classes

    register_auto_classes()
    compat.run_legacy_cli()


if __name__ == "__main__":
    main()
