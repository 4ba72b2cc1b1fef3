# configs/crosswalk.vrl written in jq, over soif's collapsed JSON Lines, for comparison
# (scripts/bench_remap.sh):
#
#   soif convert INPUT.soif --to jsonl -t collapse \
#     | jq -n -c --rawfile types configs/harvest-types.csv -f configs/crosswalk.jq

def text: if type == "string" then . else "" end;
def trimmed: sub("^\\s+"; "") | sub("\\s+$"; "");
def unique_in_order: reduce .[] as $x ([]; if any(.[]; . == $x) then . else . + [$x] end);

# The `types` table: lower-case Harvest type -> MIME type (read once).
($types | split("\n") | .[1:] | map(select(. != "") | split(","))
  | map({key: (.[0] | ascii_downcase), value: .[1]}) | from_entries) as $mime
| inputs
| (.attributes.Title | text | trimmed) as $title
| if $title == "" then error("no Title") else . end
| (.attributes.Author // [] | if type == "string" then [.] else . end
   | map(text | trimmed)) as $creators
| ([.attributes.Keywords] + [(.attributes.Embed // [])[] | .Keywords?]
   | map(select(type == "string") | split("\n")[] | trimmed | ascii_downcase)
   | unique_in_order) as $subjects
| (.attributes["Last-Modification-Time"] | text | tonumber? | todate) as $modified
| {
    template,
    url,
    attributes: ({
      title: $title,
      creators: $creators,
      subjects: $subjects,
      modified: $modified,
      mime: ($mime[.attributes.Type | text | ascii_downcase] // "application/octet-stream"),
      collection: "Computer Science Technical Reports"
    } | map_values(if type == "array" then map(select(. != "")) else . end)
      | with_entries(select(.value != null and .value != "" and .value != [])))
  }
