-- A write mix for wrk (prefixed by a generated `tokens` list and `post` id):
-- 20% new posts, 30% comments on the hot post, 50% like or unlike of it,
-- each by a random one of 100 signed-in users.
local counter = 0
local pending = {}

request = function()
  counter = counter + 1
  local token = tokens[math.random(#tokens)]
  local headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
  local r = math.random(100)
  if r <= 20 then
    return wrk.format("POST", "/api/v1/posts", headers,
      '{"category":"TEXT","content":"压测动态 ' .. counter .. ' 😀","device":"ONEPLUS A6000"}')
  elseif r <= 50 then
    return wrk.format("POST", "/api/v1/posts/" .. post .. "/comments", headers,
      '{"content":"压测评论 ' .. counter .. '"}')
  elseif r <= 75 then
    return wrk.format("PUT", "/api/v1/posts/" .. post .. "/like", headers)
  else
    return wrk.format("DELETE", "/api/v1/posts/" .. post .. "/like", headers)
  end
end

local errors = 0
response = function(status, headers, body)
  if status >= 400 then
    errors = errors + 1
    if errors <= 3 then print("error " .. status .. ": " .. body) end
  end
end

done = function(summary, latency, requests)
  -- done() runs in wrk's main state: read the count from the summary.
  io.write(string.format("== answers that were not 2xx/3xx: %d\n", summary.errors.status))
end
