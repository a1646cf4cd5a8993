import { describe, expect, it } from 'vitest';
import { hasSysResource, permissionReason } from './oom-score.js';

const status = (capEff: string) => `Name:\tnode\nUid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\nCapEff:\t${capEff}\n`;

describe('why the server could not lower its oom_score_adj', () => {
  it('reads CAP_SYS_RESOURCE (bit 24) from the effective set', () => {
    expect(hasSysResource(status('000001ffffffffff'))).toBe(true);
    // Docker's default set: chown, dac_override, fowner, fsetid, kill, setgid, setuid, setpcap, net_bind_service, net_raw, sys_chroot, mknod, audit_write, setfcap.
    expect(hasSysResource(status('00000000a80425fb'))).toBe(false);
    expect(hasSysResource(status('0000000001000000'))).toBe(true);
    expect(hasSysResource('Name:\tnode\n')).toBeUndefined();
  });

  it('as root without the capability, says so and how to add it, not that it needs root', () => {
    const reason = permissionReason(0, status('00000000a80425fb'));
    expect(reason).toContain('runs as root but without CAP_SYS_RESOURCE');
    expect(reason).toContain('--cap-add SYS_RESOURCE');
    expect(permissionReason(1000, status('0000000000000000'))).toBe('lowering it needs root with CAP_SYS_RESOURCE');
    expect(permissionReason(0, undefined)).toBe('lowering it needs root with CAP_SYS_RESOURCE');
  });
});
