#!/bin/sh
# names.sh PAGE... — the names each man page documents, from its NAME
# section (the words before "\-", separated by commas), one line each:
# "PAGE NAME". make install links NAME.SECTION to the page for every name
# without a page of its own; tests/harness/test-install.sh checks that
# every call of inccl.h is named.
for p in "$@"; do
    awk -v page="$p" '
        /^\.SH / { in_name = ($0 ~ /^\.SH "?NAME"?$/); next }
        in_name && !done {
            line = $0
            if ((i = index(line, "\\-")) > 0) { line = substr(line, 1, i - 1); done = 1 }
            n = split(line, w, /[ ,]+/)
            for (k = 1; k <= n; k++) if (w[k] != "") print page, w[k]
        }' "$p"
done
