"""Python onnxruntime on the same model and sentences as `dramatis bench embed`, for
comparison: mean pooling over the attention mask, L2-normalised, 2 intra-op threads.

Usage: python scripts/bench_embed_python.py MODEL_DIR SENTENCES_FILE BATCH [BATCH ...]
Prints one line per batch size: `python batch=N: X sentences/s`.
"""

import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def main():
    model_dir, sentences_file, *batches = sys.argv[1:]
    sentences = [line.rstrip("\n") for line in open(sentences_file, encoding="utf-8") if line.strip()]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(f"{model_dir}/model.onnx", options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tokenizer.enable_padding()
    tokenizer.enable_truncation(128)
    names = {i.name for i in session.get_inputs()}

    def embed(batch):
        encodings = tokenizer.encode_batch(batch)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = session.run(None, feed)[0]
        summed = (hidden * mask[..., None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    embed(sentences[:4])  # warm-up
    for size in map(int, batches):
        started = time.perf_counter()
        for start in range(0, len(sentences), size):
            embed(sentences[start:start + size])
        elapsed = time.perf_counter() - started
        print(f"python batch={size}: {len(sentences) / elapsed:.0f} sentences/s")


if __name__ == "__main__":
    main()
