# SPDX-License-Identifier: MIT
# cmake -DMESSAGE=<text> -P skip.cmake: prints <text>, which starts with "hpf-skip:", for a test
# whose SKIP_REGULAR_EXPRESSION counts it as skipped (never as passed).
message("${MESSAGE}")
