// Preloaded into the conformance suite's Node process (`node --import ./bearer.mjs`): every HTTP
// request it makes carries `Authorization: Bearer $TOOLCRIB_CONFORMANCE_TOKEN`, as any MCP client
// of an authenticated server does. The suite has no option for a credential; undici's documented
// dispatcher interceptors add the header to its raw requests (undici.request) and to the SDK's
// fetch alike, so the gateway under test keeps its bearer check with no allowance of any kind.
import { Agent, fetch as undiciFetch, setGlobalDispatcher } from 'undici'

const token = process.env.TOOLCRIB_CONFORMANCE_TOKEN
if (!token) throw new Error('TOOLCRIB_CONFORMANCE_TOKEN is not set')

function withBearer(headers) {
  const value = `Bearer ${token}`
  if (headers == null) return { authorization: value }
  if (Array.isArray(headers)) return [...headers, 'authorization', value]
  if (typeof headers[Symbol.iterator] === 'function' && typeof headers !== 'string') {
    return [...Array.from(headers).flat(), 'authorization', value]
  }
  return { ...headers, authorization: value }
}

const bearer = (dispatch) => (options, handler) =>
  dispatch({ ...options, headers: withBearer(options.headers) }, handler)

setGlobalDispatcher(new Agent().compose(bearer))
// The same undici for fetch as for request(), so both go through the dispatcher above.
globalThis.fetch = undiciFetch
