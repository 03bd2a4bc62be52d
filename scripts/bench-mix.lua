-- DeathStarBench socialNetwork's mixed workload for wrk, prefixed by a
-- generated `tokens` list and `uids` list (examples/bench_mix.rs): 60% home
-- feed, 30% a random user's album, 10% a new 256-character post, each as a
-- random signed-in user, pages of 10.
local alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
local threads = {}

setup = function(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

init = function(args)
  math.randomseed(os.time() * 1000 + id)
  feeds, albums, posts, failed = 0, 0, 0, 0
end

local function text(n)
  local out = {}
  for i = 1, n do
    local k = math.random(#alphabet)
    out[i] = alphabet:sub(k, k)
  end
  return table.concat(out)
end

request = function()
  local headers = { ["Authorization"] = "Bearer " .. tokens[math.random(#tokens)] }
  local r = math.random(100)
  if r <= 60 then
    feeds = feeds + 1
    return wrk.format("GET", "/api/v1/feed?limit=10", headers)
  elseif r <= 90 then
    albums = albums + 1
    return wrk.format("GET", "/api/v1/users/" .. uids[math.random(#uids)] .. "/posts?limit=10", headers)
  else
    posts = posts + 1
    headers["Content-Type"] = "application/json"
    return wrk.format("POST", "/api/v1/posts", headers,
      '{"category":"TEXT","content":"' .. text(256) .. '"}')
  end
end

response = function(status, headers, body)
  if status >= 300 then
    failed = failed + 1
    if failed <= 3 then print("answer " .. status .. ": " .. body) end
  end
end

done = function(summary, latency, requests)
  local f, a, p = 0, 0, 0
  for _, t in ipairs(threads) do
    f, a, p = f + t:get("feeds"), a + t:get("albums"), p + t:get("posts")
  end
  io.write(string.format("== sent: %d feed pages, %d albums, %d posts\n", f, a, p))
  io.write(string.format("== answers that were not 2xx: %d\n", summary.errors.status))
end
