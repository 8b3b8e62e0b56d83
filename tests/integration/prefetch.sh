#!/bin/bash
. "$top_srcdir/tests/integration/lib.sh"
done_testing
