"""Optical character recognition for pages without a usable text layer.

``engine`` reads one page image into lines (RapidOCR's PP-OCRv6 models, shipped in its wheel);
``need`` decides which pages need it; ``pool`` runs the engine in worker processes with a cache
by image hash; ``text_layer`` writes what was read into the in-memory PDF as invisible text, so
the layout reader handles a scan as it handles any PDF.
"""

# Resident memory of one OCR process reading a large page (a 9.6 MP page image, its lines found
# at 2 MP): 700-790 MB measured, most of it the text detector. The index run sizes its OCR
# processes by it.
PROCESS_MB = 750
