-- A row version longer than about 2 KB is handed to the toaster, which tries to compress its
-- largest values until it is shorter. A contract call's row crosses that size (68 bytes of
-- calldata appear three times, as data, in the request and in the signed bytes), so each of its
-- versions paid for a compression attempt, mostly in vain on hex, and each read for the
-- decompression. With the target at its maximum, rows up to a page stay whole and uncompressed,
-- and only larger ones are compressed or moved out of line as before. Server instructions for a
-- transaction's insert and three saves with an ERC-20 transfer's payload: 19% fewer
-- (bench/instructions.ts --data 68). It applies to row versions written from now on.
ALTER TABLE "transactions" SET (toast_tuple_target = 8160);
