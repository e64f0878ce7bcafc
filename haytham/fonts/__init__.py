"""DejaVu Sans for the PDF reports (see LICENSE: Bitstream Vera terms, from Debian's fonts-dejavu-core)."""
