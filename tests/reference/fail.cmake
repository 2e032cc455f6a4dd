# SPDX-License-Identifier: MIT
# cmake -DMESSAGE=<text> -P fail.cmake: fails with <text> (a test that cannot run must not pass).
message(FATAL_ERROR "${MESSAGE}")
