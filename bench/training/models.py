"""Models that only the benchmarks train, registered with oracle.py so that
run.py builds, exports and feeds them as it does the oracle's own.

gpt2-small: oracle.TinyGPT at GPT-2 small's shape (12 pre-norm blocks of
width 768 with 12 heads, sequence 128; 85 M parameters in the blocks) over
the character vocabulary of oracle/text.py, so its embedding and tied output
layer are small: the work is the blocks', as in GPT-2's.
"""

import oracle


def gpt2_small():
    return oracle.TinyGPT(length=128, width=768, heads=12, layers=12)


BENCH_MODELS = {"gpt2-small": gpt2_small}
oracle.EXTRA_MODELS.update(BENCH_MODELS)
