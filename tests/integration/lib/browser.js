// Opens xptrace's exports in their real consumers in headless Chromium (puppeteer-core
// driving /usr/bin/chromium) and prints what the page shows, for export.sh to check.
//
// One browser serves every job of the command line, each JOB being MODE:FILE:SHOT:OUT[:ARG]
// (its lines go to OUT):
//   speedscope:TRACE.json:SHOT.png:OUT
//     speedscope (npm package, served from a local HTTP server) loads the Chrome trace,
//     waits for the flame chart, takes a screenshot; prints "blank N" (how many of the
//     screenshot's sampled pixels differ from its corner's colour) and "row NAME\tTOTAL\tSELF"
//     for every function of the Sandwich view's table (the chart itself is a canvas).
//   svg:GRAPH.svg:SHOT.png:OUT[:ZOOM_NAME]
//     opens the flame graph, takes a screenshot, prints "frame LEVEL WIDTH NAME" per frame
//     drawn (widths measured in the page, getBBox) and "style FILL\tDASH\tOPACITY\tMODULE\tNAME"
//     (the rectangle's computed fill, stroke-dasharray and fill-opacity), then hovers the
//     first frame named ZOOM_NAME and prints the details line ("hover TEXT"), clicks it
//     and prints its width after the zoom ("zoomed WIDTH"), then types ZOOM_NAME into
//     the search box and prints the "Matched" line.
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');
const puppeteer = require('puppeteer-core');

let file, shot, zoomName, lines, blankPage;
const log = (l) => lines.push(l);

function serve(root, extra) {
	const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
			'.wasm': 'application/wasm', '.woff2': 'font/woff2', '.png': 'image/png' };
	const server = http.createServer((req, res) => {
		const u = decodeURIComponent(req.url.split('?')[0].split('#')[0]);
		const p = u === '/trace.json' ? extra : path.join(root, path.normalize(u === '/' ? '/index.html' : u));
		fs.readFile(p, (err, data) => {
			if (err) { res.writeHead(404); res.end(); return; }
			res.writeHead(200, { 'Content-Type': types[path.extname(p)] || 'application/octet-stream' });
			res.end(data);
		});
	});
	return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

async function launch() {
	return puppeteer.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
		       '--disable-dev-shm-usage'],
	});
}

// Pixels of the screenshot unlike its top-left one, over a grid of samples (counted in
// one blank page kept for every job: a page started costs its renderer's CPU).
async function nonBlank() {
	return blankPage.evaluate(async (png) => {
		const img = new Image();
		img.src = 'data:image/png;base64,' + png;
		await img.decode();
		const c = document.createElement('canvas');
		c.width = img.width; c.height = img.height;
		const x = c.getContext('2d');
		x.drawImage(img, 0, 0);
		const d = x.getImageData(0, 0, c.width, c.height).data, bg = d.slice(0, 3);
		let n = 0;
		for (let i = 0; i < d.length; i += 4 * 97)
			if (Math.abs(d[i] - bg[0]) + Math.abs(d[i + 1] - bg[1]) + Math.abs(d[i + 2] - bg[2]) > 30)
				n++;
		return n;
	}, fs.readFileSync(shot).toString('base64'));
}

async function speedscope(browser) {
	const root = path.dirname(require.resolve('speedscope/package.json'));
	const server = await serve(path.join(root, 'dist', 'release'), path.resolve(file));
	const port = server.address().port;
	const page = await browser.newPage();
	await page.setViewport({ width: 1200, height: 500 });
	await page.goto(`http://127.0.0.1:${port}/#profileURL=${encodeURIComponent(`http://127.0.0.1:${port}/trace.json`)}`);
	// the flame chart is a canvas the size of the view once the profile is loaded
	await page.waitForFunction(() => [...document.querySelectorAll('canvas')].some((c) => c.width > 400 && c.height > 200),
				   { timeout: 20000 });
	await new Promise((r) => setTimeout(r, 500));
	await page.screenshot({ path: shot });
	// the Sandwich view lists every function in a DOM table: Total, Self, name
	await page.keyboard.press('3');
	await page.waitForFunction(() => document.querySelectorAll('tr td').length > 2, { timeout: 10000 });
	const rows = await page.evaluate(() => [...document.querySelectorAll('tr')].map((r) =>
		[...r.querySelectorAll('td')].map((d) => d.innerText.trim())).filter((r) => r.length === 3));
	for (const [total, self, name] of rows)
		log(`row ${name}\t${total}\t${self}`);
	log('blank ' + await nonBlank());
	server.close();
}

async function svg(browser) {
	const page = await browser.newPage();
	await page.setViewport({ width: 1200, height: 400 });
	await page.goto('file://' + path.resolve(file));
	await page.screenshot({ path: shot });
	log('blank ' + await nonBlank());
	const frames = await page.evaluate(() => [...document.querySelectorAll('g.fr')].map((g) =>
		[g.dataset.l, g.querySelector('rect').getBBox().width.toFixed(2),
		 g.querySelector('title').textContent.split('\n')[0].replace(/ \([^()]*\)$/, '')]));
	for (const f of frames)
		log('frame ' + f.join(' '));
	const styles = await page.evaluate(() => [...document.querySelectorAll('g.fr')].map((g) => {
		const cs = getComputedStyle(g.querySelector('rect'));
		const t = g.querySelector('title').textContent.split('\n')[0], m = t.match(/ \(([^()]*)\)$/);
		return [cs.fill, cs.strokeDasharray, cs.fillOpacity, m ? m[1] : '', m ? t.slice(0, m.index) : t];
	}));
	for (const st of styles)
		log('style ' + st.join('\t'));
	if (!zoomName)
		return;
	// the pointer over the frame (the page's mouseover handler; puppeteer's mouse.move
	// waits seconds for a frame from the software renderer)
	await page.evaluate((name) => [...document.querySelectorAll('g.fr')].find((x) =>
		x.querySelector('title').textContent.split('\n')[0].replace(/ \([^()]*\)$/, '') === name)
		.dispatchEvent(new MouseEvent('mouseover', { bubbles: true })), zoomName);
	log('hover ' + await page.evaluate(() => document.getElementById('details').textContent));
	const w = await page.evaluate((name) => {
		const g = [...document.querySelectorAll('g.fr')].find((x) =>
			x.querySelector('title').textContent.split('\n')[0].replace(/ \([^()]*\)$/, '') === name);
		g.dispatchEvent(new MouseEvent('click', { bubbles: true }));
		return g.querySelector('rect').getBBox().width.toFixed(2);
	}, zoomName);
	log('zoomed ' + w);
	await page.type('#search', '^' + zoomName + '$');
	log(await page.evaluate(() => document.getElementById('matched').textContent));
}

(async () => {
	const browser = await launch();
	try {
		blankPage = await browser.newPage();
		for (const job of process.argv.slice(2)) {
			const [mode, f, s, out, arg] = job.split(':');
			[file, shot, zoomName, lines] = [f, s, arg, []];
			const open = await browser.pages();
			try {
				await (mode === 'speedscope' ? speedscope(browser) : svg(browser));
			} catch (e) {
				log('error ' + e.message);
			}
			// a page left open goes on drawing (speedscope's WebGL canvas, in
			// software) while the next jobs run
			for (const p of await browser.pages())
				if (!open.includes(p))
					await p.close();
			fs.writeFileSync(out, lines.join('\n') + '\n');
		}
	} finally {
		await browser.close();
	}
})().catch((e) => { console.error('browser.js: ' + e.message); process.exit(1); });
