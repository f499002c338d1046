"""Reading perflab gemm's comparison.json (schema perflab.gemm.comparison/1) for the scripts that turn a sweep into
the heuristic's table (gemm_heuristic_table.py) and into the wide-shape table and its bars (gemm_wide_table.py)."""
import json
import math

SCHEMA = "perflab.gemm.comparison/1"


class ComparisonError(Exception):
    pass


def load(path, dtypes=("bf16",)):
    """The comparison as a dict; ComparisonError naming the file when it is not one (or not of one of dtypes)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ComparisonError(f"{path}: {e}") from e
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ComparisonError(f"{path}: not a perflab gemm comparison.json (schema {SCHEMA})")
    if doc.get("dtype") not in dtypes:
        raise ComparisonError(f"{path}: dtype {doc.get('dtype')!r}: this script reads {' and '.join(dtypes)}")
    if doc.get("layout") not in ("nk", "kn"):
        raise ComparisonError(f"{path}: layout {doc.get('layout')!r} is neither nk nor kn")
    return doc


def ok_cell(shape, provider):
    """The provider's cell of a shape row when it holds a verified, timed best; else None."""
    cell = shape.get("results", {}).get(provider)
    if not isinstance(cell, dict) or cell.get("status") != "ok":
        return None
    rec = cell.get("record") or {}
    if not rec.get("verified") or not isinstance(cell.get("median_ms"), (int, float)) or cell["median_ms"] <= 0:
        return None
    return cell


def best_cublas_tflops(shape):
    """The best TFLOP/s of cuBLAS and cuBLASLt for a shape row, or None."""
    vals = [c["tflops"] for p in ("cublas", "cublaslt") if (c := ok_cell(shape, p)) and c.get("tflops")]
    return max(vals) if vals else None


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
