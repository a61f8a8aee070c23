# Sourced by the `tackle run` memory benchmarks (rss.sh, rss_pair.sh) after `steps` is set: a
# temporary directory `$work` (removed on exit) with a workspace of `steps` + 1 small notes, the
# fake model playing `bench/peers/scripts/read_loop.json` in loop mode, and the provider
# variables pointing at it. The caller runs `tackle run ... --model "fake-steps-$steps"`.
work=$(mktemp -d)
fake_pid=
trap '[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/workspace/notes"
for k in $(seq 0 "$steps"); do echo "note $k" > "$work/workspace/notes/$k.txt"; done
./target/release/tackle-fake-model --script bench/peers/scripts/read_loop.json --addr 127.0.0.1:0 > "$work/url" &
fake_pid=$!
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
export OPENAI_API_KEY=sk-bench OPENAI_BASE_URL="$(cat "$work/url")/v1" TACKLE_PROVIDER=openai
