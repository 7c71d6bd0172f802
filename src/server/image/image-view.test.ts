import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  QUESTION_TYPES,
  questionNames,
  IMAGE_TEST_SOA as SOA,
  IMAGE_TEST_ZONES as ZONES,
} from '../../../test/support/image-zones.ts';
import { nameKey, stripFirstLabel } from '../../dns/name.ts';
import { printRdata } from '../../dns/rdata.ts';
import { type Answer, answerQuery, type ZoneLookup, type ZoneView } from '../answer.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { ZoneTable } from '../zone-table.ts';
import { ZoneImageView } from './image-view.ts';
import { ZoneImage } from './zone-image.ts';

/** The same lookup as `ZoneTable.findZone`, over views of zone images. */
function imageLookup(views: ZoneView[]): ZoneLookup {
  const byKey = new Map(views.map((v) => [v.originKey, v]));
  return {
    findZone(key) {
      let k = key;
      for (;;) {
        const zone = byKey.get(k);
        if (zone) return zone;
        if (k === '.') return undefined;
        k = stripFirstLabel(k);
      }
    },
  };
}

function shown(answer: Answer): string {
  const section = (rrsets: Answer['answer']) =>
    rrsets.map((s) => `${nameKey(s.owner)} ${s.ttl} ${s.type} ${s.rdata.map(printRdata).join(' | ')}`);
  return JSON.stringify({
    outcome: answer.outcome,
    aa: answer.aa,
    answer: section(answer.answer),
    authority: section(answer.authority),
    additional: section(answer.additional),
    alias: answer.alias,
  });
}

test('a zone image answers every question exactly as the ZoneSnapshot of the same zone does', () => {
  const table = new ZoneTable();
  const views: ZoneView[] = [];
  for (const { origin, rrsets } of ZONES) {
    table.set(ZoneSnapshot.build(origin, SOA, 2026112601, rrsets));
    views.push(new ZoneImageView(ZoneImage.build(origin, SOA, 2026112601, rrsets, { shared: true })));
  }
  const images = imageLookup(views);
  const names = questionNames(ZONES, [
    'nope.example.org.',
    'b.c.example.org.',
    'c.example.org.',
    'a.b.c.example.org.',
    'zz.deep.a.b.c.example.org.',
    'anything.wild.example.org.',
    'x.sub.wild.example.org.',
    'WWW.EXAMPLE.ORG.',
    'foo.cn.example.org.',
    'host.below.sub.example.org.',
    'example.com.',
    'org.',
    '.',
  ]);
  let compared = 0;
  for (const name of names) {
    for (const type of QUESTION_TYPES) {
      const expected = shown(answerQuery(table, name, type));
      assert.equal(shown(answerQuery(images, name, type)), expected, `${name} ${type}`);
      compared++;
    }
  }
  assert.ok(compared > 1000, `${compared} questions`);
});
