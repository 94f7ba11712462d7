"""``mau view``: a self-contained static site (HTML, vanilla JS, data as JS files, frames) for a match
folder, a collect run or an eval run, plus an MP4 of the top-down map. Pure presentation: it only reads the
folders (docs/viewer.md)."""
