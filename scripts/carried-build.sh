# Sourced by the validation scripts that run a build made elsewhere on a GPU machine (gpu-validate.sh,
# sanitize-validate.sh, gemm-wide-validate.sh). Needs $build (the carried build folder) and $out (the logs' folder).
# Sets $src_path (the tree the build was made in, made valid here), $bin (its perflab) and $summary, and defines
# `step`.
here=$PWD

# The test binaries hold the absolute paths of the tree they were built in: make those paths valid here.
src_path=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
if [ -n "$src_path" ]; then
  [ -e "$src_path" ] || { mkdir -p "$(dirname "$src_path")" && ln -s "$here" "$src_path"; }
  if [ ! -e "$src_path/build/perflab" ]; then
    [ -e "$src_path/build" ] && mv "$src_path/build" "$src_path/build.away.$$"
    ln -s "$(cd "$build" && pwd)" "$src_path/build"
  fi
fi
bin=$src_path/build/perflab
summary=$out/summary.txt
: >"$summary"
step() { # step NAME LIMIT_S COMMAND...: run it with a limit, log it, one summary line
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  printf '%-22s exit %-3s %4ss%s\n' "$name" "$rc" "$(($(date +%s) - t0))" "$([ $rc = 124 ] && echo '  (time limit)')" |
    tee -a "$summary"
  return $rc
}
