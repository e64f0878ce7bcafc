"""Fonts for the PDF reports: DejaVu Sans (see LICENSE: Bitstream Vera terms, from Debian's
fonts-dejavu-core) and Noto Sans for the scripts it lacks (see LICENSE-Noto: SIL Open Font
License 1.1, from Debian's fonts-noto-core)."""
