import t from 'tap'
import {
  decodeMethodCall,
  decodeMethodResponse,
  decodeXmlRpc,
  encodeFault,
  encodeMethodCall,
  encodeMethodResponse,
  encodeXmlRpc,
  XmlRpcDouble,
  XmlRpcParseError,
} from '../../src/xapi/xml-rpc.js'
import { decodeJsonRpcRequest, decodeJsonRpcResponse, encodeJsonRpcFailure, encodeJsonRpcResult, JsonRpcParseError } from '../../src/xapi/json-rpc.js'
import { encodeXmlRpcFailure, encodeXmlRpcSuccess, xapiOutcome } from '../../src/xapi/xml-rpc-status.js'

t.test('XML-RPC values: ints as strings, typed doubles, booleans, compact datetimes, nested arrays and structs', async (t) => {
  const value = { size: 10737418240, on: true, off: false, shadow: new XmlRpcDouble(1.5), at: new Date(Date.UTC(2024, 0, 1, 13, 20, 11)), list: ['a<b', '&'], map: { 'k&': '' } }
  const xml = encodeXmlRpc(value)
  t.match(xml, '<value>10737418240</value>', 'an int is a bare decimal string')
  t.match(xml, '<dateTime.iso8601>20240101T13:20:11Z</dateTime.iso8601>')
  t.match(xml, '<double>1.5</double>')
  t.same(decodeXmlRpc(xml), { size: '10737418240', on: true, off: false, shadow: new XmlRpcDouble(1.5), at: '20240101T13:20:11Z', list: ['a<b', '&'], map: { 'k&': '' } })
})

t.test('XML-RPC: the typed forms other clients send decode to the same values', async (t) => {
  const xml = '<value><struct><member><name>a</name><value><string>x</string></value></member><member><name>b</name><value><int>-3</int></value></member><member><name>c</name><value><i4>7</i4></value></member><member><name>d</name><value><array><data/></array></value></member></struct></value>'
  t.same(decodeXmlRpc(xml), { a: 'x', b: '-3', c: '7', d: [] })
})

t.test('XML-RPC method calls and responses round-trip', async (t) => {
  const call = encodeMethodCall('VM.start', ['OpaqueRef:s', 'OpaqueRef:v', false, true])
  t.same(decodeMethodCall(call), { method: 'VM.start', params: ['OpaqueRef:s', 'OpaqueRef:v', false, true] })
  t.same(decodeMethodCall('<?xml version="1.0"?><methodCall><methodName>system.listMethods</methodName></methodCall>'), { method: 'system.listMethods', params: [] })
  t.same(decodeMethodResponse(encodeMethodResponse(['a', 'b'])), { value: ['a', 'b'] })
  t.same(decodeMethodResponse(encodeFault(-32700, 'parse error')), { fault: { code: -32700, message: 'parse error' } })
})

t.test('XAPI status structs in XML-RPC: Success with Value, Failure with ErrorDescription', async (t) => {
  const success = decodeMethodResponse(encodeXmlRpcSuccess('OpaqueRef:x'))
  t.same(success, { value: { Status: 'Success', Value: 'OpaqueRef:x' } })
  const failure = decodeMethodResponse(encodeXmlRpcFailure(['HANDLE_INVALID', 'VM', 'OpaqueRef:y']))
  t.same(failure, { value: { Status: 'Failure', ErrorDescription: ['HANDLE_INVALID', 'VM', 'OpaqueRef:y'] } })
  t.same('value' in failure && xapiOutcome(failure.value), { error: ['HANDLE_INVALID', 'VM', 'OpaqueRef:y'] })
  t.same('value' in success && xapiOutcome(success.value), { value: 'OpaqueRef:x' })
  t.equal(xapiOutcome(['not', 'a', 'status']), undefined)
})

t.test('malformed XML-RPC is an XmlRpcParseError, whatever is wrong', async (t) => {
  const bad = [
    '<methodCall><methodName>x</methodName>',
    'not xml at all',
    '<value>1</value>',
    '<methodCall><params/></methodCall>',
    '<methodCall><methodName> </methodName></methodCall>',
    '<methodCall><methodName>x</methodName><params><param><value><int>1.5</int></value></param></params></methodCall>',
    '<methodCall><methodName>x</methodName><params><param><value><boolean>yes</boolean></value></param></params></methodCall>',
    '<methodCall><methodName>x</methodName><params><param><value><double>abc</double></value></param></params></methodCall>',
    '<methodCall><methodName>x</methodName><params><param><value><nil/></value></param></params></methodCall>',
    '<methodCall><methodName>x</methodName><params><value>1</value></params></methodCall>',
    '<methodCall><methodName>x</methodName><params><param><value><struct><member><value>1</value></member></struct></value></param></params></methodCall>',
  ]
  for (const xml of bad) t.throws(() => decodeMethodCall(xml), XmlRpcParseError, xml)
  t.throws(() => decodeMethodResponse('<methodResponse/>'), XmlRpcParseError)
})

t.test('JSON-RPC requests: v1 without jsonrpc, v2 with it', async (t) => {
  t.same(decodeJsonRpcRequest('{"method":"VM.get_all","params":["s"],"id":"xyz"}'), { version: '1.0', method: 'VM.get_all', params: ['s'], id: 'xyz' })
  t.same(decodeJsonRpcRequest('{"jsonrpc":"2.0","method":"VM.get_all","params":[],"id":3}'), { version: '2.0', method: 'VM.get_all', params: [], id: 3 })
  const bad = ['{', '[]', '{"method":"x","params":[]}', '{"method":"x","params":[],"id":null}', '{"method":"x","id":1}', '{"method":"","params":[],"id":1}', '{"jsonrpc":"1.0","method":"x","params":[],"id":1}', '{"method":"x","params":{},"id":1}', '{"method":"x","params":[],"id":1.5}']
  for (const text of bad) t.throws(() => decodeJsonRpcRequest(text), JsonRpcParseError, text)
})

t.test('JSON-RPC responses and failures in both versions, as the wire-protocol document shows them', async (t) => {
  const v1 = { version: '1.0', id: 'xyz' } as const
  const v2 = { version: '2.0', id: 3 } as const
  const value = { n: 4294967296, d: new XmlRpcDouble(0.5), at: new Date(0), ok: true }
  t.same(JSON.parse(encodeJsonRpcResult(v1, value)), { result: { n: 4294967296, d: 0.5, at: '19700101T00:00:00Z', ok: true }, error: null, id: 'xyz' })
  t.same(JSON.parse(encodeJsonRpcResult(v2, ['a'])), { jsonrpc: '2.0', result: ['a'], id: 3 })
  t.same(JSON.parse(encodeJsonRpcFailure(v1, ['SESSION_INVALID', 'OpaqueRef:s'])), { result: null, error: ['SESSION_INVALID', 'OpaqueRef:s'], id: 'xyz' })
  t.same(JSON.parse(encodeJsonRpcFailure(v2, ['SESSION_INVALID', 'OpaqueRef:s'])), { jsonrpc: '2.0', error: { code: 1, message: 'SESSION_INVALID', data: ['OpaqueRef:s'] }, id: 3 })
  t.same(decodeJsonRpcResponse(encodeJsonRpcFailure(v1, ['X', 'a'])), { error: ['X', 'a'] })
  t.same(decodeJsonRpcResponse(encodeJsonRpcFailure(v2, ['X', 'a'])), { error: ['X', 'a'] })
  t.same(decodeJsonRpcResponse(encodeJsonRpcResult(v2, '')), { result: '' })
  t.throws(() => decodeJsonRpcResponse('{"id":1}'), JsonRpcParseError)
  t.throws(() => decodeJsonRpcResponse('{"error":{"message":3}}'), JsonRpcParseError)
})

t.test('frozen records encode as unfrozen ones do, their texts kept; a replaced record encodes anew', async (t) => {
  const fields = { name_label: 'a<b "q"', memory: 4294967296, at: new Date(0), shadow: new XmlRpcDouble(0.25), other: { k: ['x'] }, none: [] }
  const frozen = Object.freeze({ ...fields })
  const all = { 'OpaqueRef:1': frozen, 'OpaqueRef:2': Object.freeze({ ...fields, name_label: 'b' }) }
  const plain = { 'OpaqueRef:1': { ...fields }, 'OpaqueRef:2': { ...fields, name_label: 'b' } }
  for (let pass = 0; pass < 2; pass++) {
    t.equal(encodeXmlRpcSuccess(all), encodeXmlRpcSuccess(plain), `XML-RPC, pass ${pass}`)
    t.equal(encodeJsonRpcResult({ version: '2.0', id: 1 }, all), encodeJsonRpcResult({ version: '2.0', id: 1 }, plain), `JSON-RPC, pass ${pass}`)
  }
  t.same(JSON.parse(encodeJsonRpcResult({ version: '1.0', id: 'i' }, all))['result']['OpaqueRef:1'], {
    name_label: 'a<b "q"',
    memory: 4294967296,
    at: '19700101T00:00:00Z',
    shadow: 0.25,
    other: { k: ['x'] },
    none: [],
  })
  const renamed = { ...all, 'OpaqueRef:1': Object.freeze({ ...fields, name_label: 'renamed' }) }
  t.match(encodeXmlRpcSuccess(renamed), '<value>renamed</value>')
  t.match(encodeJsonRpcResult({ version: '2.0', id: 1 }, renamed), '"name_label":"renamed"')
})
