import { describe, expect, it } from 'vitest';
import { paramsOf, routeOf } from '../../../src/api/rest/plugins.js';

describe("a REST call's params and route", () => {
  it('takes params from `params`, else the whole body', () => {
    expect(paramsOf({ params: { a: 1 }, other: 2 })).toEqual({ a: 1 });
    expect(paramsOf({ params: null })).toBeNull();
    expect(paramsOf({ a: 1 })).toEqual({ a: 1 });
    expect(paramsOf([1, 2])).toEqual([1, 2]);
  });

  it('takes the route from the path below …/call, else the route query parameter', () => {
    expect(routeOf('/verify', new URL('http://x/?route=/other'))).toBe('/verify');
    expect(routeOf('', new URL('http://x/?route=/other'))).toBe('/other');
    expect(routeOf('', new URL('http://x/'))).toBe('');
  });
});
