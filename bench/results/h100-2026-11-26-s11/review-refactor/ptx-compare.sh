#!/usr/bin/env bash
# Session 11 review, no GPU: GLU's two word loops (glu_words, glu_fast_words) made one (glu_words<..., FAST>) and
# softmax's two copies of the resident row's loads made one (load_row_resident, softmax_row_resident_loaded): nine
# instantiations compared as PTX before (REV, default b3c336d) and after (bench/ptx_compare.sh). Output:
# ptx-compare.txt.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../../ptx_compare.sh" "$here/instantiations.cu" "${1:-b3c336d}"
