// Transfers to and from presigned object URLs (`upload_url`, `download_url`). The signature in the URL is the
// authority, so no API key goes with them: the key stays with the API, and a store that checks signatures
// (S3) would refuse a request carrying another Authorization header.
import { ApiError } from '../api';

/** PUTs the bytes by XMLHttpRequest (fetch reports no upload progress). `signal` aborts it. */
export function putPresigned(url: string, body: Blob, onProgress: (sent: number, total: number) => void, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : body.size);
    xhr.onerror = () => reject(new ApiError(0, 'the upload failed: the connection was lost'));
    xhr.onabort = () => reject(new ApiError(0, 'the upload was canceled'));
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) return resolve();
      let message = `${xhr.status} ${xhr.statusText}`;
      try {
        message = (JSON.parse(xhr.responseText) as { message?: string }).message ?? message;
      } catch {}
      reject(new ApiError(xhr.status, message));
    };
    signal?.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(body);
  });
}

/** Hands a presigned download URL to the browser, which streams it to disk with its own progress. */
export function saveFrom(url: string, filename: string): void {
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.rel = 'noopener';
  document.body.append(a);
  a.click();
  a.remove();
}
