#!/usr/bin/env bash
# The alert rules through Prometheus' own checker: `promtool check rules` on
# metrics/prometheus/ncclrec.rules.yml and `promtool test rules` on its unit tests
# (ncclrec.rules_test.yml). Usage: promtool_test.sh check|test RULES_DIR
# Exit status: 0 passed, 1 failed, 77 skipped (no promtool; Debian: apt-get install prometheus).
set -u
mode=${1:?check or test}
dir=${2:?the rules directory}
if ! command -v promtool > /dev/null; then
  echo "SKIP: promtool: not installed (Debian: apt-get install prometheus)"
  exit 77
fi
cd "${dir}" || exit 1
case "${mode}" in
  check) exec promtool check rules ncclrec.rules.yml ;;
  test) exec promtool test rules ncclrec.rules_test.yml ;;
  *) echo "promtool_test.sh: unknown mode '${mode}'" >&2; exit 1 ;;
esac
