import { Prisma } from '../generated/prisma/client.js';

/** A unique constraint refused the write: P2002 from Prisma's queries, P2010 (23505) from raw SQL. */
export function isUniqueViolation(e: unknown): boolean {
  if (!(e instanceof Prisma.PrismaClientKnownRequestError)) return false;
  if (e.code === 'P2002') return true;
  const cause = (e.meta as { driverAdapterError?: { cause?: { originalCode?: string } } } | undefined)?.driverAdapterError?.cause;
  return e.code === 'P2010' && cause?.originalCode === '23505';
}
