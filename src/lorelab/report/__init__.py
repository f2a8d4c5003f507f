"""HTML reports built from the typed receipts of an evaluation's output directory.

``build_report`` renders a learning, conditions or context output directory (or two of one kind
side by side) into one self-contained HTML file: figures drawn as inline SVG, each with a table
of the same numbers, every row linked to its receipt by a path relative to the report.
"""

from lorelab.report._build import PAIR_FILE, REPORT_FILE, Report, build_report
from lorelab.report._load import KIND_NAMES, detect_kind

__all__ = ["KIND_NAMES", "PAIR_FILE", "REPORT_FILE", "Report", "build_report", "detect_kind"]
